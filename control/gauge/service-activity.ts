import { GATEWAY_OPS, type UsageEvent } from '../../protocol/gateway.ts';
import type { GaugeActivityBucket } from '../../protocol/gauge.ts';
import { GAUGE_LIMITS } from '../../protocol/gauge-catalog.ts';
import type { StoreEnv } from '../../store/env.ts';
import type { GaugeDataRepo } from '../../store/gauge-data-repo.ts';

// The built-in `service` source's activity: this gateway's own calls as hourly buckets. The meter keeps local
// days only, so the usage path on the edge also folds each call into an in-memory bucket per (hour, model) -
// a map update, no I/O - and one transaction writes what gathered every `flushMs` (and before each activity
// read and at shutdown). A crash loses at most that interval of hourly activity; the daily usage aggregates
// are the meter's and unaffected.

export const SERVICE_SOURCE_ID = 'service';
const FLUSH_MS = 10_000;
/** A burst over many models writes early instead of growing the map without bound. */
const MAX_PENDING = 5_000;
const HOUR_MS = 3_600_000;

export interface ServiceActivityDeps {
  env: StoreEnv;
  data: Pick<GaugeDataRepo, 'stageActivity'>;
  /** Read per call: Gauge opted in and usage metering on. */
  enabled(): boolean;
  /** Read at write time: the `service` source may be disabled by a person; then nothing is kept. */
  sourceEnabled(): boolean;
  flushMs?: number;
}

export interface ServiceActivity {
  record(event: UsageEvent): void;
  /** Writes what gathered; resolves once it is committed. */
  flush(): Promise<void>;
  /** Writes what gathered and stops the timer. */
  close(): Promise<void>;
  pending(): number;
}

const count = (v: number | null | undefined) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);

/** Pending buckets by hour start, then by model: no key string is built per call. */
export type PendingBuckets = Map<number, Map<string | null, GaugeActivityBucket>>;

/**
 * Adds a call to its (hour, model) bucket; returns true when it made a new one. Input excludes cached input, as the
 * agent logs count it.
 */
export function foldCall(into: PendingBuckets, e: UsageEvent): boolean {
  const hourMs = Math.floor(e.at / HOUR_MS) * HOUR_MS;
  const model =
    e.modelId !== null && e.modelId.length > GAUGE_LIMITS.filterMax
      ? e.modelId.slice(0, GAUGE_LIMITS.filterMax)
      : e.modelId;
  let hour = into.get(hourMs);
  if (hour === undefined) into.set(hourMs, (hour = new Map()));
  let b = hour.get(model);
  const fresh = b === undefined;
  if (b === undefined) {
    b = {
      hour: new Date(hourMs).toISOString(),
      sourceId: SERVICE_SOURCE_ID,
      providerId: SERVICE_SOURCE_ID,
      model,
      project: null,
      workspace: null,
      session: null,
      requests: 0,
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    };
    hour.set(model, b);
  }
  b.requests += 1;
  const u = e.usage;
  if (u === null || !GATEWAY_OPS[e.op].metered) return fresh;
  const cached = Math.min(count(u.cachedInputTokens), count(u.inputTokens));
  b.inputTokens += count(u.inputTokens) - cached;
  b.cacheReadTokens += cached;
  b.outputTokens += count(u.outputTokens);
  b.reasoningTokens += count(u.reasoningTokens);
  return fresh;
}

export function createServiceActivity(deps: ServiceActivityDeps): ServiceActivity {
  let pending: PendingBuckets = new Map();
  let size = 0;
  let writing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => void flush().catch(() => undefined), deps.flushMs ?? FLUSH_MS);
  timer.unref();

  function flush(): Promise<void> {
    if (size === 0) return writing;
    const batch = [...pending.values()].flatMap((byModel) => [...byModel.values()]);
    pending = new Map();
    size = 0;
    // Chained: two flushes never read-modify-write the same bucket in overlapping transactions.
    writing = writing
      .catch(() => undefined)
      .then(async () => {
        if (!deps.env.isOpen() || !deps.sourceEnabled()) return;
        await deps.env.commit(() => deps.data.stageActivity(batch));
      });
    return writing;
  }

  return {
    record(event) {
      if (!deps.enabled()) return;
      if (foldCall(pending, event)) size += 1;
      if (size >= MAX_PENDING) void flush().catch(() => undefined);
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush().catch(() => undefined);
    },
    pending: () => size,
  };
}
