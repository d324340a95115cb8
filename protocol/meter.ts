import type { MessagePort } from 'node:worker_threads';
import { GATEWAY_OPS, type UsageAcceleration, type UsageEvent, type UsageRoute } from './gateway.ts';
import type { PricingSource } from './pricing.ts';

// Messages between the edge and the meter actor. Control calls (flush, prune, close) go through comlink on
// the worker's own port; usage events take a separate, plain port in batches, because a comlink call per
// event (an id, a promise and a reply each) would cost the hot path more than the event is worth.

/**
 * What crosses to the meter for one call: the event minus its request ID and anything else, plus the cost
 * estimated on the edge from the catalog price at the time of the call (protocol/pricing.ts), so a later price
 * change never rewrites what was metered. Null when the model has no USD price or the call reported no tokens.
 * `pricingSource` says what priced that estimate (state/price-index.ts): the catalog or the price database.
 */
export type MeterRecord = Omit<UsageEvent, 'kind' | 'requestId'> & {
  estimatedCostUsd?: number | null;
  pricingSource?: PricingSource | null;
};

/**
 * Records cross as one flat array of primitives, RECORD_SLOTS per record (packRecord, unpackRecord): the edge
 * builds no object per record, and structured clone copies such an array for about a third of what the same
 * records cost as objects (~280 against ~730 ns a record, bench/PROFILE.md).
 */
export interface MeterBatch {
  kind: 'usage.batch';
  fields: unknown[];
  /**
   * Where the batch's records end in their usage journals (store/usage-journal.ts), flat: file, end, file, end.
   * Committed with the records, so a restart replays only what lies past them.
   */
  marks?: (string | number)[];
}

// at, tokenId, providerId, modelId, op, outcome, usage reported (boolean), its six counts, its tool calls (null
// when none), route (null when absent), acceleration (null when absent), cache-write tokens, estimated cost,
// 1-hour cache-write tokens, the estimate's pricing source (null without an estimate), whether the token counts
// are the gateway's estimate (UsageReport.estimated), the provider key that served it (null without one).
export const RECORD_SLOTS = 22;

/** Appends the countable fields of `e` to `out`: never the request ID or anything an event picks up later. */
export function packRecord(
  out: unknown[],
  e: UsageEvent,
  estimatedCostUsd: number | null = null,
  pricingSource: PricingSource | null = null,
): void {
  const u = e.usage;
  out.push(e.at, e.tokenId, e.providerId, e.modelId, e.op, e.outcome);
  if (u === null) out.push(false, null, null, null, null, null, null, null);
  else {
    let calls: Record<string, number> | null = null;
    for (const _name in u.toolCalls) {
      calls = u.toolCalls;
      break;
    }
    out.push(
      true,
      u.inputTokens,
      u.outputTokens,
      u.cachedInputTokens,
      u.reasoningTokens,
      u.totalTokens,
      u.costUsd,
      calls,
    );
  }
  const r = e.route;
  out.push(
    r === undefined
      ? null
      : { packSlug: r.packSlug, routeId: r.routeId, fallback: r.fallback, fallbackReason: r.fallbackReason },
  );
  const a = e.acceleration;
  if (a === undefined) out.push(null);
  else {
    const acceleration: UsageAcceleration = {
      mode: a.mode,
      draftModelId: a.draftModelId,
      generationMs: a.generationMs,
    };
    if (a.draftTokens !== undefined) acceleration.draftTokens = a.draftTokens;
    if (a.acceptedDraftTokens !== undefined) acceleration.acceptedDraftTokens = a.acceptedDraftTokens;
    out.push(acceleration);
  }
  out.push(
    u === null ? null : (u.cacheWriteTokens ?? null),
    estimatedCostUsd,
    u === null ? null : (u.cacheWrite1hTokens ?? null),
    pricingSource,
    u?.estimated === true,
    e.credentialId ?? null,
  );
}

/** The record packed at `at` in `fields`. */
export function unpackRecord(fields: readonly unknown[], at: number): MeterRecord {
  const f = (i: number) => fields[at + i];
  const rec: MeterRecord = {
    at: f(0) as number,
    tokenId: f(1) as string,
    providerId: f(2) as string,
    modelId: f(3) as string | null,
    op: f(4) as MeterRecord['op'],
    outcome: f(5) as MeterRecord['outcome'],
    usage:
      f(6) === true
        ? {
            inputTokens: f(7) as number | null,
            outputTokens: f(8) as number | null,
            cachedInputTokens: f(9) as number | null,
            reasoningTokens: f(10) as number | null,
            totalTokens: f(11) as number | null,
            costUsd: f(12) as number | null,
            toolCalls: (f(13) as Record<string, number> | null) ?? {},
          }
        : null,
    estimatedCostUsd: f(17) as number | null,
    pricingSource: f(19) as PricingSource | null,
  };
  if (rec.usage !== null && f(16) !== null) rec.usage.cacheWriteTokens = f(16) as number;
  if (rec.usage !== null && f(18) !== null) rec.usage.cacheWrite1hTokens = f(18) as number;
  if (rec.usage !== null && f(20) === true) rec.usage.estimated = true;
  if (f(21) !== null) rec.credentialId = f(21) as string;
  if (f(14) !== null) rec.route = f(14) as UsageRoute;
  if (f(15) !== null) rec.acceleration = f(15) as UsageAcceleration;
  return rec;
}

// The slots a record priced on the control thread fills; a journal record from an edge thread has them null.
const ESTIMATE_SLOT = 17;
const PRICING_SOURCE_SLOT = 19;

/** Fills in a packed record's cost estimate where it has none (a replayed edge thread's record). */
export function priceRecord(
  fields: unknown[],
  at: number,
  priceOf: (rec: MeterRecord) => { estimatedCostUsd: number | null; source: PricingSource | null } | null,
): void {
  if (fields[at + ESTIMATE_SLOT] !== null) return;
  const priced = priceOf(unpackRecord(fields, at));
  if (priced === null || priced.estimatedCostUsd === null) return;
  fields[at + ESTIMATE_SLOT] = priced.estimatedCostUsd;
  fields[at + PRICING_SOURCE_SLOT] = priced.source;
}

const num = (x: unknown) => x === null || (typeof x === 'number' && Number.isFinite(x) && x >= 0);
const text = (x: unknown, nullable = false) =>
  (nullable && x === null) || (typeof x === 'string' && x.length > 0 && x.length <= 512);
const counts = (x: unknown) =>
  x === null ||
  (typeof x === 'object' &&
    !Array.isArray(x) &&
    Object.entries(x as object).every(([k, v]) => k.length <= 512 && Number.isInteger(v) && v >= 0));

/**
 * Whether a record read back from a journal file has the shape packRecord gives (a damaged file must not reach
 * the aggregates). The route and acceleration are checked loosely: the fold reads them by member.
 */
export function wellFormedRecord(fields: readonly unknown[]): boolean {
  if (fields.length !== RECORD_SLOTS) return false;
  const f = (i: number) => fields[i];
  const object = (x: unknown) => x === null || (typeof x === 'object' && !Array.isArray(x));
  return (
    typeof f(0) === 'number' &&
    Number.isFinite(f(0)) &&
    text(f(1)) &&
    text(f(2)) &&
    text(f(3), true) &&
    typeof f(4) === 'string' &&
    Object.hasOwn(GATEWAY_OPS, f(4) as string) &&
    (f(5) === 'ok' || f(5) === 'failed' || f(5) === 'aborted') &&
    typeof f(6) === 'boolean' &&
    [7, 8, 9, 10, 11, 16, 17, 18].every((i) => num(f(i))) &&
    (f(12) === null || (typeof f(12) === 'number' && Number.isFinite(f(12)))) &&
    counts(f(13)) &&
    object(f(14)) &&
    object(f(15)) &&
    (f(19) === null || typeof f(19) === 'string') &&
    typeof f(20) === 'boolean' &&
    text(f(21), true)
  );
}

/** Slots of the shared counter array the worker advances, so the edge can see its backlog without messages. */
export const METER_PROCESSED = 0;
export const METER_COMMITTED = 1;
/** Rows refused because their key would exceed LMDB's key size. */
export const METER_OVERSIZED = 2;
export const METER_COUNTER_SLOTS = 3;

export interface MeterWorkerData {
  dataDir: string;
  /** Receives MeterBatch messages. */
  records: MessagePort;
  /** The comlink end serving MeterApi. */
  control: MessagePort;
  /** Int32 slots above; record counts wrap at 2^32, so readers compare differences. */
  counters: SharedArrayBuffer;
  /** Longest time folded records wait in memory before they are committed. */
  commitMs: number;
  /** This service start's ID: the usage journal files it writes carry it (store/usage-journal.ts). */
  run: string;
}

/** The actor's control surface, exposed with comlink. */
export interface MeterApi {
  /** Commits everything folded once the first `upTo` records have arrived, and waits until it is on disk. */
  flush(upTo: number): Promise<void>;
  /** Deletes aggregates of days before `beforeDay`; resolves with the number of rows removed. */
  prune(beforeDay: string): Promise<number>;
  /** Commits, flushes and closes the store; the worker may then be terminated. */
  close(upTo: number): Promise<void>;
  /** The committed journal marks: file name and where its last committed record ends. */
  marks(): Promise<[string, number][]>;
  /** Removes journal files whose records are all committed, and their marks. */
  retire(files: string[]): Promise<void>;
}
