// The real gauge worker, which announces that it started as a collection of a source named `started`: for the
// actor's lazy-start test (actor.suite.ts).
import { parentPort } from 'node:worker_threads';

await import('../../../workers/gauge/entry.js');
parentPort.postMessage({ kind: 'gauge.collected', sourceIds: ['started'] });
