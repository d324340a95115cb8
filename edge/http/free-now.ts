import { MessageChannel } from 'node:worker_threads';

// A large request body is garbage once its request is over, but V8 frees an ArrayBuffer only when it next
// collects, and an idle service may not collect for a long time: after a burst of 16 MiB uploads the memory
// would stay resident. Transferring the ArrayBuffer into a message that is then dropped (both ports closed)
// frees its memory at once, without a collection.

/** Frees `body`'s memory now if it owns its ArrayBuffer whole; its bytes must not be read afterwards. */
export function freeNow(body: Buffer): void {
  const { buffer } = body;
  if (
    !(buffer instanceof ArrayBuffer) ||
    buffer.byteLength === 0 ||
    body.byteOffset !== 0 ||
    body.byteLength !== buffer.byteLength
  )
    return;
  const { port1, port2 } = new MessageChannel();
  port1.postMessage(null, [buffer]);
  port1.close();
  port2.close();
}
