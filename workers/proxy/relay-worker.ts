import { parentPort, workerData } from 'node:worker_threads';
import { CallTable } from '../../state/call-table.ts';
import { packBatch, unpackBatch, type TextBatch } from '../../protocol/relay-batch.ts';
import { STRING_CHUNK_MAX, type FromWorker, type ToWorker } from '../../protocol/relay.ts';
import { relay } from './relay.ts';
import { RelayControl } from './relay-control.ts';
import type { RelayWorkerData } from './relay-pool.ts';

// The message loop of one relay worker: one long-lived port, requests multiplexed by id.

const port = parentPort!;
const { arena } = workerData as RelayWorkerData;
const running = new CallTable<RelayControl>();

// Messages leave in one batch per event-loop turn: one clone and one wake-up of the edge per turn. A call's
// stream chunks of the turn join its last data message when nothing else of that call came after it. The
// last message of the worker's only call leaves at once: no other call can add to its batch.
let outbox: FromWorker[] = [];
let outboxTransfer: ArrayBuffer[] = [];
const openData = new CallTable<Extract<FromWorker, { t: 'data' }>>();
let withChunks = false;
const flush = () => {
  const batch = outbox;
  const transfer = outboxTransfer;
  outbox = [];
  outboxTransfer = [];
  openData.clear();
  // Stream bytes ride as strings that structured clone copies as they are; JSON would escape every quote.
  const json = transfer.length === 0 && !withChunks;
  withChunks = false;
  port.postMessage(json ? packBatch(batch) : batch, transfer);
};
const post = (message: FromWorker, transfer?: ArrayBuffer[]) => {
  const alone =
    outbox.length === 0 && running.size <= 1 && (message.t === 'whole' || message.t === 'end' || message.t === 'error');
  if (outbox.length === 0 && !alone) setImmediate(flush);
  if (transfer !== undefined) for (const buffer of transfer) outboxTransfer.push(buffer);
  if ((message.t === 'data' || message.t === 'end') && message.chunks !== undefined && message.chunks.length > 0)
    withChunks = true;
  if (message.t === 'data') {
    const open = openData.get(message.id);
    if (open !== undefined) {
      const chunks = open.chunks;
      for (const chunk of message.chunks) {
        const lastAt = chunks.length - 1;
        const last = chunks[lastAt];
        // Small chunks join into one, so the edge writes the turn's bytes of a call at once.
        if (typeof chunk === 'string' && typeof last === 'string' && last.length + chunk.length <= STRING_CHUNK_MAX)
          chunks[lastAt] = last + chunk;
        else chunks.push(chunk);
      }
      if (message.closing === true) open.closing = true;
      return;
    }
    openData.set(message.id, message);
  } else if (message.t !== 'free') openData.delete(message.id);
  outbox.push(message);
  if (alone) flush();
};

port.on('message', (message: ToWorker[] | TextBatch | string) => {
  const batch = Array.isArray(message) ? message : unpackBatch<ToWorker>(message);
  for (const m of batch) receive(m);
});

function receive(m: ToWorker): void {
  switch (m.t) {
    case 'start': {
      const control = new RelayControl();
      running.set(m.id, control);
      relay(m.id, m.req, control, post, arena, () => running.delete(m.id));
      return;
    }
    case 'body':
      running.get(m.id)?.pushUpload(m.chunk);
      return;
    case 'pause':
      running.get(m.id)?.pause();
      return;
    case 'resume':
      running.get(m.id)?.resume();
      return;
    case 'credit':
      running.get(m.id)?.credit(m.bytes);
      return;
    case 'abort': {
      const control = running.get(m.id);
      if (control) {
        control.abort.abort();
        control.cancelWaits();
        running.delete(m.id);
      }
      return;
    }
  }
}
