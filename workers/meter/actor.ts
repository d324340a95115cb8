import type { Worker } from 'node:worker_threads';
import type { Remote } from 'comlink';
import {
  callOn,
  closeIncarnation,
  inflightOf,
  superviseWorker,
  type Incarnation,
  type Supervision,
} from './meter-incarnation.ts';
import { replayJournals } from './meter-replay.ts';
import type { Logger } from 'pino';
import { GATEWAY_OPS, type UsageEvent } from '../../protocol/gateway.ts';
import type { ResolvedPricing } from '../../state/price-index.ts';
import { estimateCostUsd } from '../../protocol/pricing.ts';
import { openUsageJournal, type JournalMark, type UsageJournal } from '../../store/usage-journal.ts';
import { addDays, localDayOf } from '../../protocol/local-day.ts';
import {
  METER_OVERSIZED,
  packRecord,
  priceRecord,
  RECORD_SLOTS,
  type MeterApi,
  type MeterBatch,
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

const BATCH = 512;
// Records travel in batches at most this old: a message per request cost the edge more than the record
// itself, and the worker holds records for `commitMs` before committing anyway. Shorter than the edge's
// young-generation cycle under load (~13 ms): records held 20 ms outlived two collections and were promoted,
// ~130 of the ~160 bytes the edge promoted per request (bench/floor/gc.sh); at 5 ms, next to none.
const POST_EVERY_MS = 5;
const PRUNE_EVERY_MS = 60 * 60 * 1000;
const DROP_WARN_EVERY_MS = 10_000;

/** The usage journal the control thread appends its own calls' records to (none: bench/meter.ts's baseline). */
function journalOf(options: MeterOptions): UsageJournal {
  if (options.journal === false) return { append: () => null, close: () => undefined };
  const { log } = options;
  return openUsageJournal({
    dataDir: options.dataDir,
    run: options.run,
    writer: 'control',
    ...(options.journalRotateBytes !== undefined && { rotateBytes: options.journalRotateBytes }),
    onFailure: (err) =>
      log.error({ err: err.message }, 'usage journal write failed; metering goes on without crash recovery'),
  });
}

/** A record's cost estimate from the catalog price now, with what priced it; null without a price. */
function estimateOf(
  priceOf: MeterOptions['priceOf'],
  modelId: string | null,
  op: UsageEvent['op'],
  usage: UsageEvent['usage'],
) {
  const priced = usage !== null && modelId !== null && GATEWAY_OPS[op].metered ? priceOf?.(modelId) : null;
  const price = priced?.pricing;
  return price ? { estimatedCostUsd: estimateCostUsd(usage!, price), source: priced!.source } : null;
}

/** Counts dropped records, with a warning at most every DROP_WARN_EVERY_MS. */
function dropCounter(log: Logger, totals: { dropped: number }) {
  let sinceWarn = 0;
  let lastWarn = 0;
  return (n: number, meterUp: boolean): void => {
    totals.dropped += n;
    sinceWarn += n;
    const now = Date.now();
    if (now - lastWarn >= DROP_WARN_EVERY_MS) {
      log.warn(
        { dropped: sinceWarn, droppedTotal: totals.dropped, meterUp },
        'usage meter is full or down; dropping usage records',
      );
      lastWarn = now;
      sinceWarn = 0;
    }
  };
}

/**
 * The records of the next batch, packed (see MeterBatch), and where they end in their journals. A record is
 * written into `fields()` in place, then `took` journals it (unless its thread did: `mark`) and schedules the
 * batch's post; `deliver` sends it to the worker now.
 */
function createBatch(
  journal: UsageJournal,
  postEveryMs: number,
  totals: { recorded: number },
  deliver: (message: MeterBatch, records: number) => void,
) {
  let buffer: unknown[] = [];
  let marks = new Map<string, number>();
  let scheduled = false;
  const size = () => buffer.length / RECORD_SLOTS;
  function post(): void {
    scheduled = false;
    const n = size();
    if (n === 0) return;
    const message: MeterBatch = { kind: 'usage.batch', fields: buffer };
    if (marks.size > 0) message.marks = [...marks].flat();
    buffer = [];
    marks = new Map();
    deliver(message, n);
  }
  return {
    size,
    post,
    fields: () => buffer,
    took(from: number, mark: JournalMark | null | undefined): void {
      const at = mark === undefined ? journal.append(buffer, from, RECORD_SLOTS) : mark;
      if (at !== null) marks.set(at.file, at.end);
      totals.recorded += 1;
      if (size() >= BATCH) post();
      else if (!scheduled) {
        scheduled = true;
        if (postEveryMs > 0) setTimeout(post, postEveryMs);
        else setImmediate(post);
      }
    },
  };
}

// A factory: one closure holds the worker now (`cur`) and its batch; `record` is the hot path.
export function createMeter(options: MeterOptions): Meter {
  const { dataDir, run, enabled, retentionDays, log } = options;
  const commitMs = options.commitMs ?? 250;
  const postEveryMs = options.postEveryMs ?? POST_EVERY_MS;
  const maxInflight = options.maxInflight ?? 100_000;

  let supervision: Supervision | null = null;
  const current = () => supervision?.current() ?? null;
  const journal = journalOf(options);
  let closing = false;
  const totals = { recorded: 0, dropped: 0, lost: 0, oversized: 0, restarts: 0 };
  const batch = createBatch(journal, postEveryMs, totals, (message, n) => {
    const inc = current();
    if (inc === null) {
      totals.lost += n;
      return;
    }
    inc.records.postMessage(message);
    inc.posted += n;
  });
  const buffered = batch.size;
  const drop = dropCounter(log, totals);
  const estimate = (modelId: string | null, op: UsageEvent['op'], usage: UsageEvent['usage']) =>
    estimateOf(options.priceOf, modelId, op, usage);
  const call = <T>(inc: Incarnation, run: (api: Remote<MeterApi>) => Promise<T>) => callOn(inc, current, run);

  /** Applies the retention with worker `inc` (the one just started, or the current one). */
  async function prune(inc = current()): Promise<number> {
    if (inc === null) return 0;
    const beforeDay = addDays(localDayOf(Date.now()), 1 - retentionDays());
    return call(inc, (api) => api.prune(beforeDay));
  }

  /** Earlier runs' journaled records past their committed marks, priced now where an edge thread left none. */
  async function replay(): Promise<{ records: number; files: number }> {
    const inc = current();
    if (inc === null) return { records: 0, files: 0 };
    return replayJournals({
      dataDir,
      run,
      log,
      marks: () => call(inc, (api) => api.marks()),
      add(fields, mark) {
        const buffer = batch.fields();
        const from = buffer.length;
        for (const x of fields) buffer.push(x);
        priceRecord(buffer, from, (rec) => estimate(rec.modelId, rec.op, rec.usage));
        batch.took(from, mark);
      },
      flush: flushAll,
      retire: (names) => call(inc, (api) => api.retire(names)),
    });
  }

  async function flushAll(): Promise<void> {
    batch.post();
    const inc = current();
    if (inc !== null) await call(inc, (api) => api.flush(inc.posted));
  }

  supervision = superviseWorker({
    dataDir,
    commitMs,
    run,
    log,
    totals,
    closing: () => closing,
    started(inc) {
      options.onWorker?.(inc.worker);
      inc.loaded = prune(inc).catch(
        (err: unknown) => closing || log.warn({ err: String(err) }, 'usage retention pruning failed'),
      );
    },
  });
  const pruneTimer = setInterval(
    () => void prune().catch((err: unknown) => log.warn({ err: String(err) }, 'usage retention pruning failed')),
    PRUNE_EVERY_MS,
  );
  pruneTimer.unref();

  return {
    record(event, mark) {
      if (closing || !enabled()) return;
      const inc = current();
      if (inc === null || inflightOf(inc) + buffered() >= maxInflight) return drop(1, inc !== null);
      const buffer = batch.fields();
      const from = buffer.length;
      const priced = estimate(event.modelId, event.op, event.usage);
      packRecord(buffer, event, priced?.estimatedCostUsd ?? null, priced?.source ?? null);
      batch.took(from, mark);
    },
    flush: flushAll,
    recover: () =>
      replay().catch((err: unknown) => {
        log.error({ err: String(err).slice(0, 300) }, 'usage journal replay failed; its files stay for the next start');
        return { records: 0, files: 0 };
      }),
    prune,
    stats() {
      const inc = current();
      return {
        ...totals,
        oversized: totals.oversized + (inc === null ? 0 : Atomics.load(inc.counters, METER_OVERSIZED)),
        inflight: (inc === null ? 0 : inflightOf(inc)) + buffered(),
      };
    },
    async close() {
      if (closing) return;
      batch.post();
      closing = true;
      journal.close();
      clearInterval(pruneTimer);
      supervision.stop();
      const inc = current();
      if (inc !== null) await closeIncarnation(inc, () => call(inc, (api) => api.close(inc.posted)), log);
    },
  };
}
