export { actorOf, type Actor } from '../protocol/actor.ts';
