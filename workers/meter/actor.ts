import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { wrap, type Remote } from 'comlink';
import type { Logger } from 'pino';
import { GATEWAY_OPS, type UsageEvent } from '../../protocol/gateway.ts';
import type { ResolvedPricing } from '../../state/price-index.ts';
import { estimateCostUsd } from '../../protocol/pricing.ts';
import {
  journalFiles,
  journalPath,
  openUsageJournal,
  readJournal,
  type JournalMark,
  type UsageJournal,
} from '../../store/usage-journal.ts';
import { addDays, localDayOf } from '../../protocol/local-day.ts';
import {
  METER_COMMITTED,
  METER_COUNTER_SLOTS,
  METER_OVERSIZED,
  METER_PROCESSED,
  packRecord,
  priceRecord,
  wellFormedRecord,
  RECORD_SLOTS,
  type MeterApi,
  type MeterBatch,
  type MeterWorkerData,
} from '../../protocol/meter.ts';

// The edge's side of the meter actor. `record` is the hot path: it copies the countable fields into a
// batch that is posted every few milliseconds and never waits. When the worker is behind by
// `maxInflight` records, or down, records are dropped and counted (with a rate-limited warning) instead of
// queueing without bound. A worker that dies is replaced; what it had committed stays in LMDB.

export interface MeterOptions {
  dataDir: string;
  /** This service start's ID, which its usage journal files carry (store/usage-journal.ts). */
  run: string;
  /** `usage.enabled`: read per record, so the setting applies at once. */
  enabled(): boolean;
  /** `usage.retentionDays`: the last that many local days (today included) are kept. */
  retentionDays(): number;
  log: Logger;
  /** Longest time a record waits in the worker before it is committed. */
  commitMs?: number;
  /** Records posted but not yet folded by the worker beyond which new ones are dropped. */
  maxInflight?: number;
  /** How long a record may wait on the edge before its batch is posted; 0 posts on the next turn. */
  postEveryMs?: number;
  /** The usage journal's file size bound (store/usage-journal.ts); tests make it small. */
  journalRotateBytes?: number;
  /** False: no usage journal (bench/meter.ts's baseline); what a crash leaves uncommitted is then lost. */
  journal?: boolean;
  /** Sees each worker as it starts (supervision tests terminate it). */
  onWorker?(worker: Worker): void;
  /**
   * A model's price now and its source (the catalog or the price database): each call's estimated cost is fixed
   * when it is recorded, and the record says what priced it.
   */
  priceOf?(modelId: string): ResolvedPricing | null;
}

export interface MeterStats {
  /** Records accepted for metering. */
  recorded: number;
  /** Records refused because the meter was full or down. */
  dropped: number;
  /** Accepted records that were not committed when a worker died. */
  lost: number;
  /** Rows the worker refused because an ID or tool name made the key too long. */
  oversized: number;
  restarts: number;
  /** Records accepted but not yet folded by the worker. */
  inflight: number;
}

export interface Meter {
  /**
   * Meters one call. Its record goes into the usage journal first, unless `mark` says where the thread that
   * settled the call journaled it already (an edge thread).
   */
  record(event: UsageEvent, mark?: JournalMark | null): void;
  /** Resolves once every record accepted so far is committed and on disk. */
  flush(): Promise<void>;
  /** Applies `retentionDays` now (it is also applied at start and hourly); resolves with rows removed. */
  prune(): Promise<number>;
  stats(): MeterStats;
  /**
   * Meters what earlier runs journaled and did not commit (a kill -9), priced with `priceOf` as it is now, and
   * removes their files: how many records and files. Once, before the first call of this run is served.
   */
  recover(): Promise<{ records: number; files: number }>;
  /** Commits what is pending, closes the worker's store, stops the worker. */
  close(): Promise<void>;
}

interface Incarnation {
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

const BATCH = 512;
// Records travel in batches at most this old: a message per request cost the edge more than the record
// itself, and the worker holds records for `commitMs` before committing anyway. Shorter than the edge's
// young-generation cycle under load (~13 ms): records held 20 ms outlived two collections and were promoted,
// ~130 of the ~160 bytes the edge promoted per request (bench/floor/gc.sh); at 5 ms, next to none.
const POST_EVERY_MS = 5;
const PRUNE_EVERY_MS = 60 * 60 * 1000;
const DROP_WARN_EVERY_MS = 10_000;
// A worker that dies this soon after starting is restarted after a growing pause, not in a tight loop.
const STABLE_AFTER_MS = 5_000;
const MAX_RESTART_DELAY_MS = 30_000;
// Shutdown must end: a worker that does not finish its last commit by then is stopped anyway.
const CLOSE_TIMEOUT_MS = 10_000;

// A factory: one closure holds the instance's state and returns its methods, each short; hence its length.
export function createMeter(options: MeterOptions): Meter {
  const { dataDir, run, enabled, retentionDays, log } = options;
  const commitMs = options.commitMs ?? 250;
  const postEveryMs = options.postEveryMs ?? POST_EVERY_MS;
  const maxInflight = options.maxInflight ?? 100_000;

  let cur: Incarnation | null = null;
  // The records of the next batch, packed (see MeterBatch), and where they end in their journals.
  let buffer: unknown[] = [];
  let marks = new Map<string, number>();
  const journal: UsageJournal =
    options.journal === false
      ? { append: () => null, close: () => undefined }
      : openUsageJournal({
          dataDir,
          run,
          writer: 'control',
          ...(options.journalRotateBytes !== undefined && { rotateBytes: options.journalRotateBytes }),
          onFailure: (err) =>
            log.error({ err: err.message }, 'usage journal write failed; metering goes on without crash recovery'),
        });
  const buffered = () => buffer.length / RECORD_SLOTS;
  let scheduled = false;
  let closing = false;
  let restartDelay = 0;
  let restartTimer: NodeJS.Timeout | null = null;
  const totals = { recorded: 0, dropped: 0, lost: 0, oversized: 0, restarts: 0 };
  let dropsSinceWarn = 0;
  let lastDropWarn = 0;

  function spawn(): void {
    restartTimer = null;
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
    cur = inc;
    const lost = (err?: Error) => {
      if (cur !== inc) return;
      cur = null;
      const uncommitted = (inc.posted - Atomics.load(counters, METER_COMMITTED)) | 0;
      totals.lost += uncommitted;
      totals.oversized += Atomics.load(counters, METER_OVERSIZED);
      stop(new Error('The usage meter worker stopped.'));
      inc.records.close();
      inc.control.close();
      if (closing) return;
      totals.restarts += 1;
      restartDelay =
        Date.now() - inc.startedAt >= STABLE_AFTER_MS
          ? 0
          : Math.min(MAX_RESTART_DELAY_MS, Math.max(200, restartDelay * 2));
      log.error(
        { err: err?.message, lostRecords: uncommitted, restartInMs: restartDelay },
        'usage meter worker stopped; restarting it',
      );
      restartTimer = setTimeout(spawn, restartDelay);
      restartTimer.unref();
    };
    worker.on('error', lost);
    worker.on('exit', () => lost());
    options.onWorker?.(worker);
    inc.loaded = prune().catch(
      (err: unknown) => closing || log.warn({ err: String(err) }, 'usage retention pruning failed'),
    );
  }

  /** A control call that holds the process open while it runs and fails if the worker stops. */
  async function call<T>(inc: Incarnation, run: (api: Remote<MeterApi>) => Promise<T>): Promise<T> {
    if (inc.pendingCalls++ === 0) inc.control.ref();
    try {
      return await Promise.race([run(inc.api), inc.gone]);
    } finally {
      if (--inc.pendingCalls === 0 && cur === inc) inc.control.unref();
    }
  }

  function inflight(inc: Incarnation): number {
    return (inc.posted - Atomics.load(inc.counters, METER_PROCESSED)) | 0;
  }

  function drop(n: number): void {
    totals.dropped += n;
    dropsSinceWarn += n;
    const now = Date.now();
    if (now - lastDropWarn >= DROP_WARN_EVERY_MS) {
      log.warn(
        { dropped: dropsSinceWarn, droppedTotal: totals.dropped, meterUp: cur !== null },
        'usage meter is full or down; dropping usage records',
      );
      lastDropWarn = now;
      dropsSinceWarn = 0;
    }
  }

  function post(): void {
    scheduled = false;
    const n = buffered();
    if (n === 0) return;
    const fields = buffer;
    buffer = [];
    const batchMarks = marks;
    marks = new Map();
    const inc = cur;
    if (inc === null) {
      totals.lost += n;
      return;
    }
    const message: MeterBatch = { kind: 'usage.batch', fields };
    if (batchMarks.size > 0) message.marks = [...batchMarks].flat();
    inc.records.postMessage(message);
    inc.posted += n;
  }

  async function prune(): Promise<number> {
    const inc = cur;
    if (inc === null) return 0;
    const beforeDay = addDays(localDayOf(Date.now()), 1 - retentionDays());
    return call(inc, (api) => api.prune(beforeDay));
  }

  /**
   * Meters what earlier runs journaled past their committed marks, priced now where an edge thread left no
   * estimate, then removes their files. Each record carries its own mark, so a replay cut short resumes.
   */
  async function replay(): Promise<{ records: number; files: number }> {
    const files = journalFiles(dataDir).filter((f) => f.run !== run);
    const inc = cur;
    if (files.length === 0 || inc === null) return { records: 0, files: 0 };
    const committed = new Map(await call(inc, (api) => api.marks()));
    let records = 0;
    let damaged = 0;
    for (const { name } of files) {
      for (const { fields, end } of readJournal(journalPath(dataDir, name), committed.get(name) ?? 0)) {
        if (!Array.isArray(fields) || !wellFormedRecord(fields)) {
          damaged++;
          continue;
        }
        const from = buffer.length;
        for (const x of fields) buffer.push(x);
        priceRecord(buffer, from, (rec) => estimate(rec.modelId, rec.op, rec.usage));
        take(from, { file: name, end });
        records++;
      }
    }
    await flushAll();
    await call(inc, (api) => api.retire(files.map((f) => f.name)));
    if (records > 0 || damaged > 0)
      log.warn(
        { records, damaged, files: files.length },
        'usage of calls before an unclean stop metered from its journal',
      );
    return { records, files: files.length };
  }

  async function flushAll(): Promise<void> {
    post();
    const inc = cur;
    if (inc !== null) await call(inc, (api) => api.flush(inc.posted));
  }

  spawn();
  const pruneTimer = setInterval(
    () => void prune().catch((err: unknown) => log.warn({ err: String(err) }, 'usage retention pruning failed')),
    PRUNE_EVERY_MS,
  );
  pruneTimer.unref();

  /** A record's cost estimate from the catalog price now, with what priced it; null without a price. */
  function estimate(modelId: string | null, op: UsageEvent['op'], usage: UsageEvent['usage']) {
    const priced = usage !== null && modelId !== null && GATEWAY_OPS[op].metered ? options.priceOf?.(modelId) : null;
    const price = priced?.pricing;
    return price ? { estimatedCostUsd: estimateCostUsd(usage!, price), source: priced!.source } : null;
  }

  /** Appends one packed record, journaled unless it was already, and schedules its batch. */
  function take(from: number, mark: JournalMark | null | undefined): void {
    const at = mark === undefined ? journal.append(buffer, from, RECORD_SLOTS) : mark;
    if (at !== null) marks.set(at.file, at.end);
    totals.recorded += 1;
    if (buffered() >= BATCH) post();
    else if (!scheduled) {
      scheduled = true;
      if (postEveryMs > 0) setTimeout(post, postEveryMs);
      else setImmediate(post);
    }
  }

  return {
    record(event, mark) {
      if (closing || !enabled()) return;
      const inc = cur;
      if (inc === null || inflight(inc) + buffered() >= maxInflight) return drop(1);
      const from = buffer.length;
      const priced = estimate(event.modelId, event.op, event.usage);
      packRecord(buffer, event, priced?.estimatedCostUsd ?? null, priced?.source ?? null);
      take(from, mark);
    },
    flush: flushAll,
    recover: () =>
      replay().catch((err: unknown) => {
        log.error({ err: String(err).slice(0, 300) }, 'usage journal replay failed; its files stay for the next start');
        return { records: 0, files: 0 };
      }),
    prune,
    stats() {
      const inc = cur;
      return {
        ...totals,
        oversized: totals.oversized + (inc === null ? 0 : Atomics.load(inc.counters, METER_OVERSIZED)),
        inflight: (inc === null ? 0 : inflight(inc)) + buffered(),
      };
    },
    async close() {
      if (closing) return;
      post();
      closing = true;
      journal.close();
      clearInterval(pruneTimer);
      if (restartTimer !== null) clearTimeout(restartTimer);
      const inc = cur;
      if (inc === null) return;
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
        else await Promise.race([call(inc, (api) => api.close(inc.posted)), late]);
      } catch (err) {
        log.error({ err: err instanceof Error ? err.message : String(err) }, 'usage meter did not close cleanly');
      } finally {
        clearTimeout(timer);
      }
      await inc.worker.terminate();
    },
  };
}
