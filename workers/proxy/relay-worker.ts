import { parentPort } from 'node:worker_threads';
import type { FromWorker, ToWorker } from '../../protocol/relay.ts';
import { relay, RelayControl } from './relay.ts';

// The message loop of one relay worker: one long-lived port, requests multiplexed by id.

const port = parentPort!;
const running = new Map<number, RelayControl>();

// Messages leave in one batch per event-loop turn: one clone and one wake-up of the edge per turn.
let outbox: FromWorker[] = [];
let outboxTransfer: ArrayBuffer[] = [];
const flush = () => {
  const batch = outbox;
  const transfer = outboxTransfer;
  outbox = [];
  outboxTransfer = [];
  port.postMessage(batch, transfer);
};
const post = (message: FromWorker, transfer?: ArrayBuffer[]) => {
  if (outbox.length === 0) setImmediate(flush);
  outbox.push(message);
  if (transfer !== undefined) for (const buffer of transfer) outboxTransfer.push(buffer);
};

port.on('message', (batch: ToWorker[]) => {
  for (const m of batch) receive(m);
});

function receive(m: ToWorker): void {
  switch (m.t) {
    case 'start': {
      const control = new RelayControl();
      running.set(m.id, control);
      relay(m.id, m.req, control, post).finally(() => running.delete(m.id));
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
