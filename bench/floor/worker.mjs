// The floor's worker (bench/floor/edge.mjs): each call is one undici dispatch to the upstream, its answer
// read whole and sent back, or (workerData.stream) relayed as head, chunks and end; one message per
// event-loop turn, whole answers transferred, chunks as latin1 strings.
import { parentPort, workerData } from 'node:worker_threads';
import { Pool } from 'undici';
import { postStream, postWhole } from './call.mjs';

const pool = new Pool(`http://127.0.0.1:${workerData.upstream}`, { connections: 256 });
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
    if (workerData.stream) {
      postStream(pool, path, Buffer.from(body), {
        head: (status) => post({ t: 'head', id, status }),
        data: (text) => post({ t: 'data', id, text }),
        end: () => post({ t: 'end', id }),
      });
      continue;
    }
    postWhole(pool, path, Buffer.from(body), (status, whole) => {
      post({ id, status, body: whole.buffer.slice(whole.byteOffset, whole.byteOffset + whole.byteLength) });
    });
  }
});
