// The real gauge worker, which then exits as a crash would when asked to prune: for the actor's restart test
// (actor.suite.ts). The real worker's listener is attached first (messages sent before any listener wait for
// one), and its prune answers only after awaiting the store, so the exit comes before any reply.
import { parentPort } from 'node:worker_threads';

await import('../../../workers/gauge/entry.js');
parentPort.on('message', (m) => {
  if (m?.kind === 'gauge.prune') process.exit(3);
});
