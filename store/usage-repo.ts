import type { Database } from 'lmdb';
import { BASELINE_ACCELERATION_MODE } from '../protocol/gateway.ts';
import { PRICE_DATABASE } from '../state/price-index.ts';
import type { PricingSource } from '../protocol/pricing.ts';
import type {
  UsageAccelerationRow,
  UsageBreakdownRow,
  UsageCounters,
  UsageDay,
  UsageFilter,
  UsageGroupBy,
  UsagePricingSource,
  UsageRouteRow,
  UsageSummary,
  UsageToolRow,
} from '../protocol/http/usage.ts';
import type { StoreEnv } from './env.ts';
import {
  addInto,
  dayRange,
  emptyAcceleration,
  emptyTotals,
  nullable,
  parseUsageKey,
  USAGE_DBS,
  USAGE_JOURNAL_MARKS_DB,
  type AccelerationTotals,
  type ToolTotals,
  type UsageTotals,
} from './usage-layout.ts';

// Usage aggregates (layout in usage-layout.ts). The meter worker is the only writer (`usageWriter`); the
// edge reads with `usageRepo`, straight from LMDB, grouping and ranking in memory after one range scan.

/** Deltas to add, keyed as stored: what the meter folds between commits. */
export interface UsageDeltas {
  daily: ReadonlyMap<string, UsageTotals>;
  tools: ReadonlyMap<string, ToolTotals>;
  routes: ReadonlyMap<string, UsageTotals>;
  acceleration: ReadonlyMap<string, AccelerationTotals>;
  credentials: ReadonlyMap<string, UsageTotals>;
}

export interface UsageWriter {
  /**
   * Adds every delta to its stored row in one transaction, committed when this returns, with the usage journal's
   * marks (store/usage-journal.ts) of the records folded into them; `forget` drops marks of files removed.
   */
  commit(deltas: UsageDeltas, marks?: ReadonlyMap<string, number>, forget?: Iterable<string>): void;
  /** The journal marks committed: file name and where its last committed record ends. */
  marks(): Map<string, number>;
  /** Removes the rows of days before `beforeDay`; returns how many. */
  prune(beforeDay: string): number;
}

export interface Ranked<T> {
  data: T[];
  hasMore: boolean;
}

export interface UsageRepo {
  summary(f: UsageFilter): Omit<UsageSummary, 'from' | 'to'>;
  daily(f: UsageFilter): UsageDay[];
  breakdown(f: UsageFilter, groupBy: UsageGroupBy, limit: number): Ranked<UsageBreakdownRow>;
  tools(f: UsageFilter, limit: number): Ranked<UsageToolRow>;
  routes(f: UsageFilter, limit: number): Ranked<UsageRouteRow>;
  acceleration(f: UsageFilter, limit: number): Ranked<UsageAccelerationRow>;
}

function tables(env: StoreEnv) {
  return {
    daily: env.db<UsageTotals>(USAGE_DBS.daily),
    tools: env.db<ToolTotals>(USAGE_DBS.tools),
    routes: env.db<UsageTotals>(USAGE_DBS.routes),
    acceleration: env.db<AccelerationTotals>(USAGE_DBS.acceleration),
    credentials: env.db<UsageTotals>(USAGE_DBS.credentials),
  };
}

/** The usage journal's marks: not aggregates, so not in `tables` (prune and the readers skip them). */
const marksDb = (env: StoreEnv) => env.db<number>(USAGE_JOURNAL_MARKS_DB);

export function usageWriter(env: StoreEnv): UsageWriter {
  const dbs = tables(env);
  const marks = marksDb(env);
  // Inside transactionSync, `put` writes synchronously into that transaction (and is cheaper than putSync).
  function apply<T extends Record<string, number>>(db: Database<T, string>, deltas: ReadonlyMap<string, T>): void {
    for (const [key, delta] of deltas) {
      const stored = db.get(key);
      void db.put(key, stored === undefined ? delta : addInto(stored, delta));
    }
  }
  return {
    commit(d, journal, forget) {
      // Synchronous on the meter's own thread: the commit is whole or absent even if the thread is killed.
      env.root.transactionSync(() => {
        apply(dbs.daily, d.daily);
        apply(dbs.tools, d.tools);
        apply(dbs.routes, d.routes);
        apply(dbs.acceleration, d.acceleration);
        apply(dbs.credentials, d.credentials);
        if (journal !== undefined) for (const [file, end] of journal) void marks.put(file, end);
        if (forget !== undefined) for (const file of forget) void marks.remove(file);
      });
    },
    marks: () => new Map([...marks.getRange()].map(({ key, value }) => [key, value])),
    prune(beforeDay) {
      // Only this thread writes these tables, so keys read now are still there inside the transaction.
      const doomed = (Object.values(dbs) as Database<unknown, string>[]).map((db) => ({
        db,
        keys: [...db.getKeys({ end: `${beforeDay}|` })],
      }));
      if (doomed.every((d) => d.keys.length === 0)) return 0;
      let removed = 0;
      env.root.transactionSync(() => {
        for (const { db, keys } of doomed) for (const key of keys) if (db.removeSync(key)) removed++;
      });
      return removed;
    },
  };
}

interface Row<T> {
  day: string;
  providerId: string;
  modelId: string | null;
  tokenId: string;
  /** The table's parts after the token. */
  extra: string[];
  value: T;
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

export function countersOf(t: UsageTotals): UsageCounters {
  return {
    requests: t.requests,
    failedRequests: t.failedRequests,
    inputTokens: t.inputTokens,
    outputTokens: t.outputTokens,
    cachedInputTokens: t.cachedInputTokens,
    reasoningTokens: t.reasoningTokens,
    totalTokens: t.totalTokens,
    cacheWriteTokens: t.cacheWriteTokens,
    cacheWrite1hTokens: t.cacheWrite1hTokens ?? 0,
    estimatedUsageRequests: t.estimatedUsageRequests ?? 0,
    // Sums of binary fractions drift in the last digits; a nano-dollar is far below any price.
    costUsd: t.costReports + t.unreportedEstimates === 0 ? null : round(t.costUsd + t.unreportedEstimatedCostUsd, 9),
    providerReportedCostUsd: t.costReports === 0 ? null : round(t.costUsd, 9),
    estimatedCostUsd: t.estimates === 0 ? null : round(t.estimatedCostUsd, 9),
    costEstimated: t.unreportedEstimates > 0,
    pricingSources: pricingSourcesOf(t),
  };
}

/**
 * The estimates split by what priced them. Rows written before the split hold their estimates in neither
 * source's counters (read as 0, every sum starting from emptyTotals): what is left over has no known source.
 */
function pricingSourcesOf(t: UsageTotals): UsagePricingSource[] {
  const sources: UsagePricingSource[] = [];
  const add = (source: PricingSource | null, calls: number, unreportedCalls: number, costUsd: number) => {
    if (calls > 0) sources.push({ source, calls, unreportedCalls, estimatedCostUsd: round(Math.max(0, costUsd), 9) });
  };
  add('catalog', t.catalogEstimates, t.catalogUnreportedEstimates, t.catalogEstimatedCostUsd);
  add(PRICE_DATABASE, t.databaseEstimates, t.databaseUnreportedEstimates, t.databaseEstimatedCostUsd);
  add(
    null,
    t.estimates - t.catalogEstimates - t.databaseEstimates,
    t.unreportedEstimates - t.catalogUnreportedEstimates - t.databaseUnreportedEstimates,
    t.estimatedCostUsd - t.catalogEstimatedCostUsd - t.databaseEstimatedCostUsd,
  );
  return sources;
}

/** Sorts by `score` descending, then by group key for a stable order, and cuts at `limit`. */
function rank<T>(groups: Map<string, T>, score: (t: T) => number[], limit: number): Ranked<[string, T]> {
  const all = [...groups];
  const scores = new Map(all.map(([k, t]) => [k, score(t)]));
  all.sort(([a], [b]) => {
    const sa = scores.get(a)!;
    const sb = scores.get(b)!;
    for (let i = 0; i < sa.length; i++) if (sa[i] !== sb[i]) return sb[i]! - sa[i]!;
    return a < b ? -1 : a > b ? 1 : 0;
  });
  return { data: all.slice(0, limit), hasMore: all.length > limit };
}

function group<T, G>(
  rows: Iterable<Row<T>>,
  keyOf: (r: Row<T>) => string,
  make: (r: Row<T>) => G,
  add: (g: G, r: Row<T>) => void,
): Map<string, G> {
  const groups = new Map<string, G>();
  for (const r of rows) {
    const k = keyOf(r);
    let g = groups.get(k);
    if (g === undefined) groups.set(k, (g = make(r)));
    add(g, r);
  }
  return groups;
}

const sumTotals = <T extends UsageTotals>(empty: () => T) => ({
  make: () => empty(),
  add: (g: T, r: Row<T>) => void addInto(g, r.value),
});

/**
 * The read side of usage: each method scans one of the tables through `scan`, which applies the filter, and
 * folds the rows into the view it answers; it holds no state of its own.
 *
 * `ownerOf` maps a token ID to its service account now: usage keys hold the token only, so a token moved
 * between owners (or revoked) is attributed as it is when the usage is read.
 */
export function usageRepo(env: StoreEnv, ownerOf: (tokenId: string) => string | null = () => null): UsageRepo {
  const dbs = tables(env);

  function* scan<T>(db: Database<T, string>, f: UsageFilter): Generator<Row<T>> {
    // The meter commits from its own thread; start from its latest commit, not this thread's cached snapshot.
    env.root.resetReadTxn();
    for (const { key, value } of db.getRange(dayRange(f.from, f.to))) {
      const { day, parts } = parseUsageKey(key);
      const [providerId = '', model = '', tokenId = '', ...extra] = parts;
      const modelId = nullable(model);
      if (f.providerId !== undefined && providerId !== f.providerId) continue;
      if (f.modelId !== undefined && modelId !== f.modelId) continue;
      if (f.tokenId !== undefined && tokenId !== f.tokenId) continue;
      if (f.serviceAccountId !== undefined && ownerOf(tokenId) !== f.serviceAccountId) continue;
      yield { day, providerId, modelId, tokenId, extra, value };
    }
  }

  const totals = sumTotals(emptyTotals);
  const accTotals = sumTotals(emptyAcceleration);

  return {
    summary(f) {
      const all = emptyTotals();
      const days = new Set<string>();
      for (const r of scan(dbs.daily, f)) {
        addInto(all, r.value);
        if (r.value.requests > 0) days.add(r.day);
      }
      let toolCalls = 0;
      for (const r of scan(dbs.tools, f)) toolCalls += r.value.calls;
      return { totals: countersOf(all), toolCalls, activeDays: days.size };
    },

    daily(f) {
      // The scan is in key order, which starts with the day: groups come out ascending.
      const days = group(scan(dbs.daily, f), (r) => r.day, totals.make, totals.add);
      return [...days].map(([day, t]) => ({ day, ...countersOf(t) }));
    },

    breakdown(f, groupBy, limit) {
      // Keys are a dimension of their own table: only calls of providers that hold keys are in it.
      const groups = group(
        scan(groupBy === 'credential' ? dbs.credentials : dbs.daily, f),
        (r) => JSON.stringify(dimensionsOf(r, groupBy, ownerOf)),
        (r) => ({ head: r, t: emptyTotals() }),
        (g, r) => void addInto(g.t, r.value),
      );
      const ranked = rank(groups, (g) => [g.t.totalTokens, g.t.requests], limit);
      return {
        hasMore: ranked.hasMore,
        data: ranked.data.map(([, { head, t }]) => ({ ...dimensionsOf(head, groupBy, ownerOf), ...countersOf(t) })),
      };
    },

    tools(f, limit) {
      const groups = group(
        scan(dbs.tools, f),
        (r) => r.extra[0] ?? '',
        () => ({ calls: 0 }),
        (g, r) => void (g.calls += r.value.calls),
      );
      const ranked = rank(groups, (g) => [g.calls], limit);
      return { hasMore: ranked.hasMore, data: ranked.data.map(([name, g]) => ({ name, calls: g.calls })) };
    },

    routes(f, limit) {
      const keyOf = (r: Row<UsageTotals>) => JSON.stringify([r.providerId, r.modelId, ...r.extra]);
      const groups = group(
        scan(dbs.routes, f),
        keyOf,
        (r) => ({ head: r, t: emptyTotals() }),
        (g, r) => void addInto(g.t, r.value),
      );
      const ranked = rank(groups, (g) => [g.t.requests, g.t.totalTokens], limit);
      return {
        hasMore: ranked.hasMore,
        data: ranked.data.map(([, { head, t }]) => {
          const [packSlug = '', routeId = '', fallback = '0', reason = ''] = head.extra;
          return {
            packSlug,
            routeId,
            providerId: head.providerId,
            modelId: head.modelId,
            fallback: fallback === '1',
            fallbackReason: nullable(reason),
            ...countersOf(t),
          };
        }),
      };
    },

    acceleration(f, limit) {
      const keyOf = (r: Row<AccelerationTotals>) => JSON.stringify([r.providerId, r.modelId, ...r.extra]);
      const groups = group(
        scan(dbs.acceleration, f),
        keyOf,
        (r) => ({ head: r, t: accTotals.make() }),
        (g, r) => void addInto(g.t, r.value),
      );
      const baselines = new Map<string, AccelerationTotals>();
      for (const { head, t } of groups.values()) {
        if (head.extra[0] !== BASELINE_ACCELERATION_MODE) continue;
        const k = JSON.stringify([head.providerId, head.modelId]);
        baselines.set(k, addInto(baselines.get(k) ?? emptyAcceleration(), t));
      }
      const ranked = rank(
        groups,
        (g) => [g.head.extra[0] === BASELINE_ACCELERATION_MODE ? 0 : 1, g.t.outputTokens, g.t.requests],
        limit,
      );
      return {
        hasMore: ranked.hasMore,
        data: ranked.data.map(([, { head, t }]) =>
          accelerationRow(head, t, baselines.get(JSON.stringify([head.providerId, head.modelId]))),
        ),
      };
    },
  };
}

function dimensionsOf(
  r: Row<unknown>,
  groupBy: UsageGroupBy,
  ownerOf: (tokenId: string) => string | null,
): Pick<UsageBreakdownRow, 'providerId' | 'modelId' | 'tokenId' | 'serviceAccountId' | 'credentialId'> {
  if (groupBy === 'credential') return { providerId: r.providerId, credentialId: r.extra[0] ?? '' };
  if (groupBy === 'service_account') return { serviceAccountId: ownerOf(r.tokenId) };
  if (groupBy === 'provider') return { providerId: r.providerId };
  if (groupBy === 'model') return { modelId: r.modelId };
  if (groupBy === 'token') return { tokenId: r.tokenId };
  return { providerId: r.providerId, modelId: r.modelId };
}

function accelerationRow(
  head: Row<AccelerationTotals>,
  t: AccelerationTotals,
  baseline: AccelerationTotals | undefined,
): UsageAccelerationRow {
  const [mode = '', draft = ''] = head.extra;
  const accelerated = mode !== BASELINE_ACCELERATION_MODE;
  // Output tokens per millisecond; a speedup needs both rates, so both sides need tokens and time.
  const rate = t.generationMs > 0 && t.outputTokens > 0 ? t.outputTokens / t.generationMs : null;
  const baseRate =
    baseline && baseline.generationMs > 0 && baseline.outputTokens > 0
      ? baseline.outputTokens / baseline.generationMs
      : null;
  const compare = accelerated && rate !== null && baseRate !== null;
  return {
    providerId: head.providerId,
    modelId: head.modelId,
    mode,
    draftModelId: nullable(draft),
    accelerated,
    ...countersOf(t),
    generationMs: round(t.generationMs, 3),
    draftTokens: t.draftReports > 0 ? t.draftTokens : null,
    acceptedDraftTokens: t.draftReports > 0 ? t.acceptedDraftTokens : null,
    draftAcceptance: t.draftReports > 0 && t.draftTokens > 0 ? round(t.acceptedDraftTokens / t.draftTokens, 4) : null,
    speedup: compare ? round(rate / baseRate, 3) : null,
    estimatedTimeSavedMs: compare ? Math.round(t.outputTokens / baseRate - t.generationMs) : null,
  };
}
