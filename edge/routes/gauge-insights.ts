import { ServiceError } from '../../protocol/errors.ts';
import { GAUGE_LIMITS, LIVE_HEADERS_ACCOUNT_PREFIX } from '../../protocol/gauge-catalog.ts';
import { readQuery } from '../../protocol/query.ts';
import type { ActivityOrigin, ActivityQuery } from '../../store/gauge-activity.ts';
import type { GaugeDataRepo } from '../../store/gauge-data-repo.ts';
import type { GaugeSourceRepo } from '../../store/gauge-source-repo.ts';
import type { Catalog } from '../../protocol/catalog.ts';
import { estimate, LOOKBACK_MS, modelBase, rankCandidates } from '../../protocol/gauge-recommend.ts';
import { gaugeDisabled, isAccount, type GaugeSettings } from '../../protocol/gauge-sources.ts';
import type { GaugeCapacityPort } from '../../protocol/ports/gauge.ts';
import { route, type RouteDef } from '../http/router.ts';

// What Gauge makes of what it collected (docs/api.md, Gauge): hourly activity, the capacity signal Smart
// Route reads, and advisory recommendations. All read LMDB and memory only; none runs a collector or changes
// anything.

export interface GaugeInsightDeps {
  data: GaugeDataRepo;
  sources: GaugeSourceRepo;
  activity: ActivityQuery;
  /** Writes the service's pending hourly activity, so a read sees every call that ended before it. */
  flushServiceActivity(): Promise<void>;
  signal: GaugeCapacityPort;
  catalog(): Catalog;
  settings(): GaugeSettings;
}

const DAY_MS = 86_400_000;
export const ACTIVITY_DEFAULT_DAYS = 30;
export const ACTIVITY_MAX_DAYS = 366;
export const ACTIVITY_ORIGINS: readonly ActivityOrigin[] = ['service', 'local_logs', 'polled'];
export const ACTIVITY_QUERY = [
  'sourceId',
  'accountId',
  'providerId',
  'source',
  'model',
  'project',
  'workspace',
  'session',
  'after',
  'before',
  'limit',
  'offset',
] as const;
export const RECOMMENDATION_QUERY = ['accountId', 'model', 'durationSeconds'] as const;
export const DURATION = { min: 300, max: 604_800, default: 3_600 } as const;

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

/** The selected range: [after, before), defaulting to the trailing 30 days; at most 366 days. */
export function activityRange(
  after: number | undefined,
  before: number | undefined,
  now: number,
): { after: number; before: number } {
  const end = before ?? (after !== undefined ? Math.min(now, after + ACTIVITY_MAX_DAYS * DAY_MS) : now);
  const start = after ?? end - ACTIVITY_DEFAULT_DAYS * DAY_MS;
  if (start >= end) throw invalid('after', '`after` must be earlier than `before`.');
  if (end - start > ACTIVITY_MAX_DAYS * DAY_MS)
    throw invalid('before', `One request spans at most ${ACTIVITY_MAX_DAYS} days; narrow \`after\`/\`before\`.`);
  return { after: start, before: end };
}

/** A recommendation for an account Gauge has no reading of. */
const NO_READING = {
  verdict: 'unknown',
  confidence: 'low',
  reason: 'no reading of this account yet: refresh it first',
  window: null,
  burnRatePerHour: null,
  projectedRemaining: null,
  runsOutAt: null,
} as const;

/** Who else could serve `model`: the provider kinds whose catalog models share its name (its own, with none). */
function servingKinds(catalog: ReturnType<GaugeInsightDeps['catalog']>, model: string | null, providerId: string) {
  const kinds = new Set<string>();
  if (model === null) kinds.add(providerId);
  else {
    for (const m of catalog.discoverable()) {
      if (m.id === model || modelBase(m.upstreamModelId) === modelBase(model)) {
        const kind = catalog.provider(m.providerId)?.kind;
        if (kind) kinds.add(kind);
      }
    }
  }
  return kinds;
}

export function gaugeInsightRoutes(deps: GaugeInsightDeps): RouteDef[] {
  const { data, sources, signal } = deps;
  const enabled = () => deps.settings().enabled;

  function originOf(sourceId: string): ActivityOrigin | null {
    const s = sources.get(sourceId);
    if (!s) return null;
    return s.kind === 'service' ? 'service' : s.kind === 'local_logs' ? 'local_logs' : 'polled';
  }
  const page = deps.activity;

  return [
    route({
      method: 'GET',
      path: '/v1/gauge/activity',
      scope: 'read',
      handle: async ({ req }) => {
        const q = readQuery(req.query, ACTIVITY_QUERY);
        const id = (name: string) => q.string(name, GAUGE_LIMITS.idMax);
        const label = (name: string) => q.string(name, GAUGE_LIMITS.filterMax);
        const filter = {
          sourceId: id('sourceId'),
          accountId: id('accountId'),
          providerId: id('providerId'),
          source: q.oneOf('source', ACTIVITY_ORIGINS),
          model: label('model'),
          project: label('project'),
          workspace: label('workspace'),
          session: label('session'),
        };
        const range = activityRange(q.dateTime('after'), q.dateTime('before'), Date.now());
        const limit = q.int('limit', 1, GAUGE_LIMITS.pageMax, GAUGE_LIMITS.pageDefault);
        const offset = q.int('offset', 0, GAUGE_LIMITS.offsetMax, 0);
        const bounds = { after: new Date(range.after).toISOString(), before: new Date(range.before).toISOString() };
        if (!enabled()) return { body: { enabled: false, ...bounds, data: [], limit, offset, hasMore: false } };
        await deps.flushServiceActivity();
        const found = page(range, filter, limit, offset, originOf);
        return { body: { enabled: true, ...bounds, data: found.data, limit, offset, hasMore: found.hasMore } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/gauge/capacity',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        if (!enabled()) return { body: { enabled: false, data: [] } };
        return { body: { enabled: true, data: await signal.rows() } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/gauge/recommendations',
      scope: 'read',
      handle: async ({ req }) => {
        const q = readQuery(req.query, RECOMMENDATION_QUERY);
        const accountId = q.string('accountId', GAUGE_LIMITS.idMax);
        if (accountId === undefined) throw invalid('accountId', '`accountId` is required.');
        const model = q.string('model', GAUGE_LIMITS.filterMax) ?? null;
        const durationSeconds = q.int('durationSeconds', DURATION.min, DURATION.max, DURATION.default);
        if (!enabled()) throw gaugeDisabled();
        const record = sources.get(accountId);
        const stored = data.reading(accountId);
        const known =
          record !== undefined
            ? isAccount(record)
            : accountId.startsWith(LIVE_HEADERS_ACCOUNT_PREFIX) && stored !== undefined;
        if (!known)
          throw new ServiceError('NOT_FOUND', `No Gauge account with ID \`${accountId}\`.`, { param: 'accountId' });
        const providerId = stored?.reading.providerId ?? record!.providerId!;
        const now = Date.now();
        const history =
          stored === undefined
            ? []
            : [...data.history(now - LOOKBACK_MS, [stored.sourceId])]
                .filter((h) => h.accountId === accountId)
                .map((h) => h.reading);
        const result =
          stored === undefined ? NO_READING : estimate(stored.reading, history, now, durationSeconds * 1000);
        const kinds = servingKinds(deps.catalog(), model, providerId);
        const candidates = rankCandidates(
          (await signal.rows(now))
            .filter((r) => r.model === null && r.accountId !== accountId && kinds.has(r.providerId))
            .map((r) => ({
              accountId: r.accountId,
              providerId: r.providerId,
              headroom: r.headroom,
              resetsAt: r.resetsAt,
              status: r.status,
            })),
        );
        return {
          body: {
            advisory: true,
            accountId,
            providerId,
            model,
            durationSeconds,
            generatedAt: new Date(now).toISOString(),
            ...result,
            candidates,
          },
        };
      },
    }),
  ];
}
