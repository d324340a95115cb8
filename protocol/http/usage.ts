// The usage routes' vocabulary (docs/api.md, Usage): query parameters, the breakdown
// dimensions, and the answers. Every number is an aggregate; nothing here identifies a single request.

import type { PricingSource } from '../pricing.ts';

/** Breakdown dimensions, as spelled in `groupBy`. */
export const USAGE_GROUP_BY = [
  'provider',
  'model',
  'provider_model',
  'token',
  'service_account',
  'credential',
] as const;
export type UsageGroupBy = (typeof USAGE_GROUP_BY)[number];
export const DEFAULT_USAGE_GROUP_BY: UsageGroupBy = 'model';

export const USAGE_COMMON_PARAMS = ['from', 'to', 'providerId', 'modelId', 'tokenId', 'serviceAccountId'] as const;

/** Extra parameters per route, with their `limit` bounds and defaults (docs/api.md, Conventions). */
export const USAGE_ROUTES = {
  summary: { path: '/v1/usage/summary', params: [], limit: null },
  daily: { path: '/v1/usage/daily', params: [], limit: null },
  breakdown: { path: '/v1/usage/breakdown', params: ['groupBy', 'limit'], limit: { max: 500, default: 50 } },
  tools: { path: '/v1/usage/tools', params: ['limit'], limit: { max: 500, default: 20 } },
  routes: { path: '/v1/usage/routes', params: ['limit'], limit: { max: 500, default: 50 } },
  acceleration: { path: '/v1/usage/acceleration', params: ['limit'], limit: { max: 500, default: 50 } },
} as const satisfies Record<
  string,
  { path: string; params: readonly string[]; limit: { max: number; default: number } | null }
>;
export type UsageRouteName = keyof typeof USAGE_ROUTES;

/** `to` defaults to today and `from` to this many days before `to` (a 365-day window). */
export const USAGE_DEFAULT_SPAN_DAYS = 364;
/** Longest range one request may cover: the longest retention (`usage.retentionDays` <= 3650) holds no more. */
export const USAGE_MAX_SPAN_DAYS = 3650;
/** Usage cannot predate the Unix epoch. */
export const USAGE_EARLIEST_DAY = '1970-01-01';

export interface UsageFilter {
  /** Local days, YYYY-MM-DD, both inclusive. */
  from: string;
  to: string;
  providerId?: string;
  modelId?: string;
  tokenId?: string;
  /** Rows of tokens that this service account owns now. */
  serviceAccountId?: string;
}

export interface UsageCounters {
  requests: number;
  /** Requests that ended `failed` or `aborted` (also counted in `requests`). */
  failedRequests: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
  totalTokens: number;
  /** Of the input, written to a prompt cache (styleB cache_creation_input_tokens); 0 where not reported. */
  cacheWriteTokens: number;
  /** Of the cache writes, those with a 1-hour lifetime (styleB); 0 where not reported. */
  cacheWrite1hTokens: number;
  /**
   * Of the requests, those whose token counts are partly the gateway's estimate: the call ended before its usage
   * arrived, or the upstream reported none (docs/api.md, Usage).
   */
  estimatedUsageRequests: number;
  /**
   * USD: each call's provider-reported cost where it reported one, else its catalog-price estimate; null when
   * no counted call had either. `costEstimated` says whether any part of it is an estimate.
   */
  costUsd: number | null;
  /** Sum of provider-reported cost in USD; null when no counted call reported one. */
  providerReportedCostUsd: number | null;
  /**
   * Metered tokens times the catalog price the model had when each call was metered, for every call with a USD
   * price (also those that reported a cost, for comparison); null when no counted call had a price.
   */
  estimatedCostUsd: number | null;
  /** True when some of `costUsd` is an estimate, not a bill. */
  costEstimated: boolean;
  /** What priced `estimatedCostUsd`: one entry per source with an estimate, the catalog first; empty without. */
  pricingSources: UsagePricingSource[];
}

export interface UsagePricingSource {
  /**
   * `catalog` (the model's own `pricing`), the price database as `<name>@<version>` (rows keep no version: this
   * is the database pinned now, also for calls priced by an earlier pin), or null for estimates metered before
   * their source was recorded.
   */
  source: PricingSource | null;
  /** Calls it priced. */
  calls: number;
  /** Of those, calls that reported no cost: their estimate is part of `costUsd`. */
  unreportedCalls: number;
  /** The sum of its estimates, USD. */
  estimatedCostUsd: number;
}

export interface UsageRange {
  from: string;
  to: string;
}

export interface UsageSummary extends UsageRange {
  totals: UsageCounters;
  toolCalls: number;
  /** Local days in the range with at least one request. */
  activeDays: number;
}

export interface UsageDay extends UsageCounters {
  day: string;
}

export interface UsageDaily extends UsageRange {
  /** Ascending; days without traffic are omitted. */
  data: UsageDay[];
}

export interface UsageBreakdownRow extends UsageCounters {
  providerId?: string;
  /** Null for calls addressed by a response ID (no model was resolved). */
  modelId?: string | null;
  tokenId?: string;
  /** The owner of the row's token as it is now; null for tokens without one, revoked, or unauthenticated. */
  serviceAccountId?: string | null;
  /** The provider key that served the calls (`groupBy=credential`, with `providerId`); keyed providers only. */
  credentialId?: string;
}

export interface UsagePage<T> extends UsageRange {
  data: T[];
  /** True when more rows matched than `limit`. */
  hasMore: boolean;
}

export interface UsageBreakdown extends UsagePage<UsageBreakdownRow> {
  groupBy: UsageGroupBy;
}

export interface UsageToolRow {
  name: string;
  calls: number;
}

export interface UsageRouteRow extends UsageCounters {
  packSlug: string;
  routeId: string;
  providerId: string;
  modelId: string | null;
  fallback: boolean;
  fallbackReason: string | null;
}

export interface UsageAccelerationRow extends UsageCounters {
  providerId: string;
  modelId: string | null;
  mode: string;
  draftModelId: string | null;
  /** False for the baseline mode `none`. */
  accelerated: boolean;
  generationMs: number;
  /** Sums of the draft counters; null when the runtime reported none. */
  draftTokens: number | null;
  acceptedDraftTokens: number | null;
  /** acceptedDraftTokens / draftTokens; null without draft counters. */
  draftAcceptance: number | null;
  /** Output tokens per second relative to the same model's baseline rows in the range; null without a baseline. */
  speedup: number | null;
  /** Baseline time for this row's output tokens minus its generation time; null without a baseline. */
  estimatedTimeSavedMs: number | null;
}
