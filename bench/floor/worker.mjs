// The floor's worker (bench/floor/edge.mjs): each call is one undici dispatch to the upstream, its answer
// read whole and sent back, or an event stream relayed as head, chunks and end; one message per event-loop
// turn, whole answers transferred, chunks as latin1 strings.
import { writeFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { Pool } from 'undici';
import { relayCall } from './call.mjs';

// Named for bench/floor/thread-split.mjs (Linux).
try {
  writeFileSync('/proc/thread-self/comm', 'floor-relay');
} catch {}

// No connection cap: each of many concurrent streams holds an upstream connection (as in Switchyard's relay).
const pool = new Pool(`http://127.0.0.1:${workerData.upstream}`, { connections: null });
let outbox = [];
let transfer = [];
let flushing = false;
function post(message) {
  outbox.push(message);
  if (message.body !== undefined) transfer.push(message.body);
  if (!flushing) {
    flushing = true;
    setImmediate(() => {
      flushing = false;
      const batch = outbox;
      const buffers = transfer;
      outbox = [];
      transfer = [];
      parentPort.postMessage(batch, buffers);
    });
  }
}

parentPort.on('message', (batch) => {
  for (const { id, path, body } of batch) {
    relayCall(pool, path, Buffer.from(body), {
      whole: (status, bytes) =>
        post({ id, status, body: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) }),
      head: (status) => post({ t: 'head', id, status }),
      data: (text) => post({ t: 'data', id, text }),
      end: () => post({ t: 'end', id }),
    });
  }
});
