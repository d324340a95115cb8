import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { wrap, type Remote } from 'comlink';
import type { Logger } from 'pino';
import {
  METER_COMMITTED,
  METER_COUNTER_SLOTS,
  METER_OVERSIZED,
  METER_PROCESSED,
  type MeterApi,
  type MeterWorkerData,
} from '../../protocol/meter.ts';

// One meter worker as the meter actor (actor.ts) holds it: its ports, its shared counters, what was posted to it,
// and how it is called and closed. A worker that dies is replaced by a new incarnation.

export interface Incarnation {
  worker: Worker;
  records: MessagePort;
  control: MessagePort;
  api: Remote<MeterApi>;
  counters: Int32Array;
  /** Records posted to this worker (exact; the shared counters wrap at 2^32). */
  posted: number;
  startedAt: number;
  /** Rejects when the worker stops, so no control call waits for a reply that cannot come. */
  gone: Promise<never>;
  /** Settles once the worker has loaded its modules (its start's pruning answered) or stopped. */
  loaded: Promise<unknown>;
  pendingCalls: number;
}

// Shutdown must end: a worker that does not finish its last commit by then is stopped anyway.
const CLOSE_TIMEOUT_MS = 10_000;
// A worker that dies this soon after starting is restarted after a growing pause, not in a tight loop.
const STABLE_AFTER_MS = 5_000;
const MAX_RESTART_DELAY_MS = 30_000;

/** Records posted to the worker and not yet folded by it. */
export const inflightOf = (inc: Incarnation): number => (inc.posted - Atomics.load(inc.counters, METER_PROCESSED)) | 0;

export interface Supervision {
  /** The worker now; null between a death and its restart. */
  current(): Incarnation | null;
  /** No restart after this. */
  stop(): void;
}

export interface SuperviseOptions {
  dataDir: string;
  commitMs: number;
  run: string;
  log: Logger;
  /** Counted here: records a dead worker had not committed, rows it refused, restarts. */
  totals: { lost: number; oversized: number; restarts: number };
  closing(): boolean;
  /** Each worker as it starts. */
  started(inc: Incarnation): void;
}

/** Starts the meter worker and replaces it when it dies, after a growing pause when it dies young. */
export function superviseWorker(o: SuperviseOptions): Supervision {
  let cur: Incarnation | null = null;
  let restartDelay = 0;
  let restartTimer: NodeJS.Timeout | null = null;
  function spawn(): void {
    restartTimer = null;
    const { inc, stop } = newIncarnation(o.dataDir, o.commitMs, o.run);
    cur = inc;
    const lost = (err?: Error) => {
      if (cur !== inc) return;
      cur = null;
      const uncommitted = (inc.posted - Atomics.load(inc.counters, METER_COMMITTED)) | 0;
      o.totals.lost += uncommitted;
      o.totals.oversized += Atomics.load(inc.counters, METER_OVERSIZED);
      stop(new Error('The usage meter worker stopped.'));
      inc.records.close();
      inc.control.close();
      if (o.closing()) return;
      o.totals.restarts += 1;
      restartDelay =
        Date.now() - inc.startedAt >= STABLE_AFTER_MS
          ? 0
          : Math.min(MAX_RESTART_DELAY_MS, Math.max(200, restartDelay * 2));
      o.log.error(
        { err: err?.message, lostRecords: uncommitted, restartInMs: restartDelay },
        'usage meter worker stopped; restarting it',
      );
      restartTimer = setTimeout(spawn, restartDelay);
      restartTimer.unref();
    };
    inc.worker.on('error', lost);
    inc.worker.on('exit', () => lost());
    o.started(inc);
  }
  spawn();
  return {
    current: () => cur,
    stop() {
      if (restartTimer !== null) clearTimeout(restartTimer);
    },
  };
}

/** Starts a worker; its ports do not hold the process open. `stop` fails its calls once it is gone. */
export function newIncarnation(
  dataDir: string,
  commitMs: number,
  run: string,
): { inc: Incarnation; stop(err: Error): void } {
  const records = new MessageChannel();
  const control = new MessageChannel();
  const counters = new Int32Array(new SharedArrayBuffer(4 * METER_COUNTER_SLOTS));
  const workerData: MeterWorkerData = {
    dataDir,
    records: records.port2,
    control: control.port2,
    counters: counters.buffer as SharedArrayBuffer,
    commitMs,
    run,
  };
  const worker = new Worker(new URL('./entry.js', import.meta.url), {
    workerData,
    transferList: [records.port2, control.port2],
  });
  worker.unref();
  records.port1.unref();
  control.port1.unref();
  let stop!: (err: Error) => void;
  const gone = new Promise<never>((_, reject) => (stop = reject));
  gone.catch(() => undefined);
  const inc: Incarnation = {
    worker,
    records: records.port1,
    control: control.port1,
    api: wrap<MeterApi>(control.port1),
    counters,
    posted: 0,
    startedAt: Date.now(),
    gone,
    loaded: gone,
    pendingCalls: 0,
  };
  return { inc, stop };
}

/** A control call that holds the process open while it runs and fails if the worker stops. */
export async function callOn<T>(
  inc: Incarnation,
  current: () => Incarnation | null,
  run: (api: Remote<MeterApi>) => Promise<T>,
): Promise<T> {
  if (inc.pendingCalls++ === 0) inc.control.ref();
  try {
    return await Promise.race([run(inc.api), inc.gone]);
  } finally {
    if (--inc.pendingCalls === 0 && current() === inc) inc.control.unref();
  }
}

/** Closes a worker (its last commit, at most CLOSE_TIMEOUT_MS), then stops it; `close` asks it to. */
export async function closeIncarnation(inc: Incarnation, close: () => Promise<unknown>, log: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), CLOSE_TIMEOUT_MS)),
  );
  late.catch(() => undefined);
  try {
    // Nothing was ever sent to this worker: it has nothing to commit and is stopped without a close call
    // (its start's pruning is one LMDB transaction, whole or not at all). But not before it has loaded:
    // a thread stopped while it loads LMDB's native addon aborts the whole process.
    if (inc.posted === 0) await Promise.race([inc.loaded, late]);
    else await Promise.race([close(), late]);
  } catch (err) {
    log.error({ err: err instanceof Error ? err.message : String(err) }, 'usage meter did not close cleanly');
  } finally {
    clearTimeout(timer);
  }
  await inc.worker.terminate();
}
