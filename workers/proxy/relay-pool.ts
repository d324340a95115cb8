import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { ServiceError } from '../../protocol/errors.ts';
import { CallTable } from '../../state/call-table.ts';
import { packBatch, unpackBatch, type TextBatch } from '../../protocol/relay-batch.ts';
import type { FromWorker, ToWorker } from '../../protocol/relay.ts';
import { createBodyArena, isSharedBody, type BodyArena, type WorkerArena } from '../shared/body-arena.ts';
import { deliverRelayMessage, type RelayPool, type RelaySink } from '../shared/relay-sink.ts';
import type { ProxyWorkerData } from './credentials.ts';

// The edge's side of the relay: a fixed set of workers, each on one long-lived port, requests spread to
// the least busy and multiplexed by id. A worker that dies fails only its own requests and is replaced.

/** What a relay worker starts with: the vault's directory and the body arena it reads large bodies from. */
export interface RelayWorkerData extends ProxyWorkerData {
  arena: WorkerArena;
}

interface Slot {
  worker: Worker;
  inflight: CallTable<RelaySink>;
  /** Arena slots handed to this worker and not yet freed: freed by the pool if the worker dies. */
  bodies: Set<number>;
  /** Messages of this event-loop turn, posted together: one clone and one wake-up per turn, not per message. */
  outbox: ToWorker[];
  transfer: ArrayBuffer[];
}

function flushOutbox(slot: Slot): void {
  const batch = slot.outbox;
  const transfer = slot.transfer;
  slot.outbox = [];
  slot.transfer = [];
  slot.worker.postMessage(transfer.length === 0 ? packBatch(batch) : batch, transfer);
}

/** How long close waits for the workers to report the calls it aborted. */
const CLOSE_GRACE_MS = 2000;

// A relay worker's garbage is short-lived (one message, one chunk): a young generation this size collects it
// often and cheaply, where V8's default lets each worker's heap grow by tens of megabytes under load.
const RELAY_YOUNG_MB = 16;

/** A worker gone: its calls fail, and its body slots are free (it reads nothing more). */
function failSlot(slot: Slot, arena: BodyArena): void {
  for (const sink of slot.inflight.values()) {
    sink.error(new ServiceError('UPSTREAM_ERROR', 'The relay worker stopped during the request.'), null);
  }
  slot.inflight.clear();
  for (const body of slot.bodies) arena.free(body);
  slot.bodies.clear();
}

// A factory: one closure holds the relay workers, one slot each, and the calls in flight on each.
export function createRelayPool(options: {
  dataDir: string;
  threads?: number;
  arena?: BodyArena;
}): RelayPool & { arena: BodyArena } {
  const size = options.threads ?? Math.max(1, availableParallelism());
  const arena = options.arena ?? createBodyArena();
  const workerData: RelayWorkerData = {
    dataDir: options.dataDir,
    arena: { buffer: arena.buffer, slotSize: arena.slotSize },
  };
  const slots: Slot[] = [];
  let nextId = 1;
  /** The close under way, once close was called; calls still running then end as shut down. */
  let closing: Promise<void> | null = null;
  /** Set while close waits for the aborted calls' last messages. */
  let onIdle: (() => void) | null = null;
  const idle = () => {
    if (onIdle !== null && slots.every((s) => s.inflight.size === 0)) onIdle();
  };

  function spawn(index: number): void {
    const worker = new Worker(new URL('./relay-entry.js', import.meta.url), {
      workerData,
      resourceLimits: { maxYoungGenerationSizeMb: RELAY_YOUNG_MB },
    });
    const slot: Slot = { worker, inflight: new CallTable(), bodies: new Set(), outbox: [], transfer: [] };
    slots[index] = slot;
    worker.on('message', (message: FromWorker[] | TextBatch | string) => {
      const batch = Array.isArray(message) ? message : unpackBatch<FromWorker>(message);
      for (const m of batch) {
        if (m.t === 'free') {
          slot.bodies.delete(m.slot);
          arena.free(m.slot);
        } else deliverRelayMessage(m, slot.inflight, closing !== null);
      }
      // An idle worker does not keep the process alive; one with calls in flight does.
      if (slot.inflight.size === 0) {
        worker.unref();
        idle();
      }
    });
    const lost = () => {
      if (slots[index] !== slot) return;
      failSlot(slot, arena);
      if (closing === null) spawn(index);
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    // After the listeners: on Node 20 a 'message' listener added later makes the worker hold the process again.
    worker.unref();
  }

  for (let i = 0; i < size; i++) spawn(i);

  const send = (slot: Slot, m: ToWorker, transfer?: ArrayBuffer) => {
    // The worker's only call goes at once: nothing else is on its way to join the batch, and waiting for the
    // end of the turn would only add to the call's latency (one agent at a time is the common case).
    const alone = slot.outbox.length === 0 && m.t === 'start' && slot.inflight.size === 1;
    if (slot.outbox.length === 0 && !alone) setImmediate(flushOutbox, slot);
    slot.outbox.push(m);
    if (transfer !== undefined) slot.transfer.push(transfer);
    if (alone) flushOutbox(slot);
  };

  async function closeOnce(graceMs: number): Promise<void> {
    // Each worker answers an abort with the call's usage so far, so what was spent is metered before the meter
    // closes.
    if (slots.some((s) => s.inflight.size > 0)) {
      let timer: NodeJS.Timeout | undefined;
      const done = new Promise<void>((resolve) => {
        onIdle = resolve;
        timer = setTimeout(resolve, graceMs);
      });
      for (const slot of slots) {
        for (const id of slot.inflight.ids()) send(slot, { t: 'abort', id });
        flushOutbox(slot);
      }
      await done;
      clearTimeout(timer);
      onIdle = null;
    }
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  return {
    arena,
    start(req, sink) {
      let slot = slots[0]!;
      for (const s of slots) if (s.inflight.size < slot.inflight.size) slot = s;
      const id = nextId++;
      slot.inflight.set(id, sink);
      if (isSharedBody(req.body)) slot.bodies.add(req.body.shared);
      slot.worker.ref();
      send(slot, { t: 'start', id, req }, req.body instanceof ArrayBuffer ? req.body : undefined);
      let abortSent = false;
      return {
        body: (chunk) => send(slot, { t: 'body', id, chunk }, chunk ?? undefined),
        pause: () => send(slot, { t: 'pause', id }),
        resume: () => send(slot, { t: 'resume', id }),
        credit: (bytes) => send(slot, { t: 'credit', id, bytes }),
        abort() {
          if (!slot.inflight.has(id)) return false;
          if (!abortSent) send(slot, { t: 'abort', id });
          abortSent = true;
          return true;
        },
      };
    },
    close(graceMs = CLOSE_GRACE_MS) {
      closing ??= closeOnce(graceMs);
      return closing;
    },
  };
}
