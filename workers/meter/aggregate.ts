import { GATEWAY_OPS, type UsageReport } from '../../protocol/gateway.ts';
import { localDayOf, nextLocalMidnight } from '../../protocol/local-day.ts';
import type { MeterRecord } from '../../protocol/meter.ts';
import {
  emptyAcceleration,
  emptyTotals,
  keyFits,
  usageKey,
  type AccelerationTotals,
  type ToolTotals,
  type UsageTotals,
} from '../../store/usage-layout.ts';

// Pure folding of usage records into per-key deltas, keyed exactly as they are stored. Only counters,
// names and IDs are read from a record: whatever else it carries is never looked at.

export interface PendingAggregates {
  daily: Map<string, UsageTotals>;
  tools: Map<string, ToolTotals>;
  routes: Map<string, UsageTotals>;
  acceleration: Map<string, AccelerationTotals>;
  /** Per provider key (W4.2): the calls of providers that hold keys. */
  credentials: Map<string, UsageTotals>;
  /** Rows refused because their key would exceed LMDB's limit (absurdly long IDs or tool names). */
  oversized: number;
}

export function createPending(): PendingAggregates {
  return {
    daily: new Map(),
    tools: new Map(),
    routes: new Map(),
    acceleration: new Map(),
    credentials: new Map(),
    oversized: 0,
  };
}

export function pendingRows(p: PendingAggregates): number {
  return p.daily.size + p.tools.size + p.routes.size + p.acceleration.size + p.credentials.size;
}

/** A count worth adding: finite and not negative. Null (not reported) and junk add nothing. */
const count = (v: number | null | undefined): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);

/** Folds one record's request and token counters into `t`. */
export function addRecord(
  t: UsageTotals,
  rec: Pick<MeterRecord, 'op' | 'outcome' | 'usage' | 'estimatedCostUsd' | 'pricingSource'>,
): void {
  t.requests += 1;
  if (rec.outcome !== 'ok') t.failedRequests += 1;
  const u: UsageReport | null = rec.usage;
  // Speech, transcription, image edits, rerank and the like are counted, never token-metered.
  if (u === null || !GATEWAY_OPS[rec.op].metered) return;
  t.inputTokens += count(u.inputTokens);
  t.outputTokens += count(u.outputTokens);
  t.cachedInputTokens += count(u.cachedInputTokens);
  t.reasoningTokens += count(u.reasoningTokens);
  t.totalTokens += count(u.totalTokens);
  t.cacheWriteTokens += count(u.cacheWriteTokens);
  t.cacheWrite1hTokens += count(u.cacheWrite1hTokens);
  if (u.estimated === true) t.estimatedUsageRequests += 1;
  const reported = typeof u.costUsd === 'number' && Number.isFinite(u.costUsd) && u.costUsd >= 0;
  if (reported) {
    t.costUsd += u.costUsd!;
    t.costReports += 1;
  }
  const estimate = rec.estimatedCostUsd;
  if (typeof estimate === 'number' && Number.isFinite(estimate) && estimate >= 0) {
    t.estimatedCostUsd += estimate;
    t.estimates += 1;
    if (!reported) {
      t.unreportedEstimatedCostUsd += estimate;
      t.unreportedEstimates += 1;
    }
    // Counted by kind, not by name: every source but the catalog is the one pinned database.
    const source = rec.pricingSource;
    if (source === 'catalog') {
      t.catalogEstimatedCostUsd += estimate;
      t.catalogEstimates += 1;
      if (!reported) t.catalogUnreportedEstimates += 1;
    } else if (typeof source === 'string') {
      t.databaseEstimatedCostUsd += estimate;
      t.databaseEstimates += 1;
      if (!reported) t.databaseUnreportedEstimates += 1;
    }
  }
}

function row<T>(map: Map<string, T>, key: string, make: () => T): T {
  let t = map.get(key);
  if (t === undefined) {
    t = make();
    map.set(key, t);
  }
  return t;
}

/** Folds one record, bucketed on `day` (its local day). */
export function foldRecord(p: PendingAggregates, rec: MeterRecord, day: string): void {
  const dims = [rec.providerId, rec.modelId, rec.tokenId] as const;
  const base = usageKey(day, dims);
  if (!keyFits(base)) {
    p.oversized += 1;
    return;
  }
  addRecord(row(p.daily, base, emptyTotals), rec);

  if (rec.usage !== null && GATEWAY_OPS[rec.op].metered) {
    for (const [name, calls] of Object.entries(rec.usage.toolCalls)) {
      const n = count(calls);
      if (n === 0) continue;
      const key = usageKey(day, [...dims, name]);
      if (keyFits(key)) row(p.tools, key, () => ({ calls: 0 })).calls += n;
      else p.oversized += 1;
    }
  }

  if (rec.credentialId !== undefined) {
    const key = usageKey(day, [...dims, rec.credentialId]);
    if (keyFits(key)) addRecord(row(p.credentials, key, emptyTotals), rec);
    else p.oversized += 1;
  }

  const route = rec.route;
  if (route !== undefined) {
    const reason = route.fallback ? route.fallbackReason : null;
    const key = usageKey(day, [...dims, route.packSlug, route.routeId, route.fallback ? '1' : '0', reason]);
    if (keyFits(key)) addRecord(row(p.routes, key, emptyTotals), rec);
    else p.oversized += 1;
  }

  const acc = rec.acceleration;
  if (acc !== undefined) {
    const key = usageKey(day, [...dims, acc.mode, acc.draftModelId]);
    if (!keyFits(key)) {
      p.oversized += 1;
      return;
    }
    const t = row(p.acceleration, key, emptyAcceleration);
    addRecord(t, rec);
    t.generationMs += count(acc.generationMs);
    if (typeof acc.draftTokens === 'number') {
      t.draftTokens += count(acc.draftTokens);
      t.acceptedDraftTokens += count(acc.acceptedDraftTokens);
      t.draftReports += 1;
    }
  }
}

/** Local day of a timestamp, remembering the current day's bounds: nearly every record falls in it. */
export function dayCache(): (ms: number) => string {
  let start = 0;
  let end = -1;
  let day = '';
  return (ms) => {
    if (ms < start || ms >= end) {
      day = localDayOf(ms);
      end = nextLocalMidnight(ms);
      const d = new Date(ms);
      start = new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
    }
    return day;
  };
}
