import { fitsBytes, MAX_KEY_BYTES } from './keys.ts';

// The layout of usage aggregates in LMDB, shared by the meter (the only writer) and the readers.
//
// Four named databases, one row per local day and dimension tuple, msgpack values holding counters only:
//
//   usage-daily         day|providerId|modelId|tokenId                                -> UsageTotals
//   usage-tools         day|providerId|modelId|tokenId|toolName                       -> ToolTotals
//   usage-routes        day|providerId|modelId|tokenId|packSlug|routeId|fallback|reason -> UsageTotals
//   usage-acceleration  day|providerId|modelId|tokenId|mode|draftModelId              -> AccelerationTotals
//   usage-credentials   day|providerId|modelId|tokenId|credentialId                   -> UsageTotals
//
// Every key starts with the fixed-width day, so a day range is one key-range scan ([from|, to}) and pruning
// is a scan of everything before a day. Parts are escaped (`%` -> %25, `|` -> %7C) so any ID or tool name
// round-trips; an empty part stands for null (model of a call addressed by response ID, no draft model, no
// fallback reason), which no real ID is. `fallback` is 1 or 0.

export const USAGE_DBS = {
  daily: 'usage-daily',
  tools: 'usage-tools',
  routes: 'usage-routes',
  acceleration: 'usage-acceleration',
  credentials: 'usage-credentials',
} as const;
export type UsageTable = keyof typeof USAGE_DBS;
/** Journal file name -> where its last committed record ends (store/usage-journal.ts). */
export const USAGE_JOURNAL_MARKS_DB = 'usage-journal-marks';

// Type aliases, not interfaces, so they fit `Record<string, number>` and one adder serves all three.
export type UsageTotals = {
  requests: number;
  failedRequests: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
  totalTokens: number;
  costUsd: number;
  /** Requests that reported a cost: distinguishes "cost 0" from "no cost reported". */
  costReports: number;
  // Added with estimated cost; rows written before lack them and read as 0 (addInto, emptyTotals).
  /** Of the input, written to a prompt cache (styleB cache_creation_input_tokens). */
  cacheWriteTokens: number;
  /** Of those, written for one hour (styleB cache_creation.ephemeral_1h_input_tokens). Rows before it read 0. */
  cacheWrite1hTokens: number;
  /** Catalog-price estimates of every call that had one, whether or not the provider reported a cost. */
  estimatedCostUsd: number;
  estimates: number;
  /** The part of those estimates for calls that reported no cost: what fills `costUsd` where a bill is missing. */
  unreportedEstimatedCostUsd: number;
  unreportedEstimates: number;
  // Added with the price database: which source priced those estimates. The catalog's `pricing` or the pinned
  // database (state/price-index.ts, PRICE_DATABASE; its version is not kept). Estimates in rows written before
  // are in neither: their source is unknown.
  catalogEstimatedCostUsd: number;
  catalogEstimates: number;
  /** Of the catalog's estimates, those of calls that reported no cost (part of `unreportedEstimates`). */
  catalogUnreportedEstimates: number;
  databaseEstimatedCostUsd: number;
  databaseEstimates: number;
  databaseUnreportedEstimates: number;
  /** Requests whose token counts are partly the gateway's estimate (UsageReport.estimated). Older rows read 0. */
  estimatedUsageRequests: number;
};

export type ToolTotals = { calls: number };

export type AccelerationTotals = UsageTotals & {
  generationMs: number;
  draftTokens: number;
  acceptedDraftTokens: number;
  /** Requests that reported draft counters. */
  draftReports: number;
};

export function emptyTotals(): UsageTotals {
  return {
    requests: 0,
    failedRequests: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    reasoningTokens: 0,
    totalTokens: 0,
    costUsd: 0,
    costReports: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    estimatedCostUsd: 0,
    estimates: 0,
    unreportedEstimatedCostUsd: 0,
    unreportedEstimates: 0,
    catalogEstimatedCostUsd: 0,
    catalogEstimates: 0,
    catalogUnreportedEstimates: 0,
    databaseEstimatedCostUsd: 0,
    databaseEstimates: 0,
    databaseUnreportedEstimates: 0,
    estimatedUsageRequests: 0,
  };
}

export function emptyAcceleration(): AccelerationTotals {
  return { ...emptyTotals(), generationMs: 0, draftTokens: 0, acceptedDraftTokens: 0, draftReports: 0 };
}

/** Adds `delta` into `into`, field by field; fields missing from an older stored row count as 0. */
export function addInto<T extends Record<string, number>>(into: T, delta: Readonly<T>): T {
  const target = into as Record<string, number>;
  for (const k of Object.keys(delta)) target[k] = (target[k] ?? 0) + (delta as Record<string, number>)[k]!;
  return into;
}

// A key over LMDB's limit would fail the whole commit, so such rows are refused earlier (counted as
// `oversized` by the meter). They are not hashed (store/keys.ts): the parts of a usage key are read back
// from the key itself. A tool name (from a client or an upstream, unbounded) can make one this long, and a
// model ID full of escaped characters; every other part is an ID, slug or enum value bounded at the edge.
export { MAX_KEY_BYTES };

const NEEDS_ESCAPE = /[%|]/;

function escapePart(part: string): string {
  return NEEDS_ESCAPE.test(part) ? part.replace(/%/g, '%25').replace(/\|/g, '%7C') : part;
}

function unescapePart(part: string): string {
  return part.includes('%') ? part.replace(/%(25|7C)/g, (_, code: string) => (code === '25' ? '%' : '|')) : part;
}

/** The key of a row: day first, then the parts in the order of the table's layout; null becomes ''. */
export function usageKey(day: string, parts: readonly (string | null)[]): string {
  let key = day;
  for (const part of parts) key += '|' + (part === null ? '' : escapePart(part));
  return key;
}

export function keyFits(key: string): boolean {
  // A usage key starts with its day, a digit: lmdb-js adds no type byte to it.
  return fitsBytes(key, MAX_KEY_BYTES);
}

/** The day and the unescaped parts of a key. */
export function parseUsageKey(key: string): { day: string; parts: string[] } {
  const [day, ...parts] = key.split('|');
  return { day: day!, parts: parts.map(unescapePart) };
}

/** The first and just-past-the-last key of a day range (both days inclusive): `|` < `}` in every encoding. */
export function dayRange(from: string, to: string): { start: string; end: string } {
  return { start: `${from}|`, end: `${to}}` };
}

export const nullable = (part: string): string | null => (part === '' ? null : part);
