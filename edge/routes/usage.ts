import { ServiceError } from '../../protocol/errors.ts';
import {
  DEFAULT_USAGE_GROUP_BY,
  USAGE_COMMON_PARAMS,
  USAGE_DEFAULT_SPAN_DAYS,
  USAGE_EARLIEST_DAY,
  USAGE_GROUP_BY,
  USAGE_MAX_SPAN_DAYS,
  USAGE_ROUTES,
  type UsageFilter,
  type UsageRouteName,
} from '../../protocol/http/usage.ts';
import { addDays, daysBetween, localDayOf } from '../../protocol/local-day.ts';
import { readQuery, type QueryReader } from '../../protocol/query.ts';
import type { UsageRepo } from '../../store/usage-repo.ts';
import { route, type RouteDef, type RouteResult } from '../http/router.ts';

// The six usage routes. Every parameter is validated before LMDB is read; the store holds aggregates only,
// so nothing here can reveal a single request.

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

function readFilter(q: QueryReader, today: string): UsageFilter {
  const to = q.localDay('to') ?? today;
  const from = q.localDay('from') ?? addDays(to, -USAGE_DEFAULT_SPAN_DAYS);
  if (to < USAGE_EARLIEST_DAY) throw invalid('to', `\`to\` must not be earlier than ${USAGE_EARLIEST_DAY}.`);
  if (from < USAGE_EARLIEST_DAY) throw invalid('from', `\`from\` must not be earlier than ${USAGE_EARLIEST_DAY}.`);
  if (from > to) throw invalid('from', '`from` must not be later than `to`.');
  if (daysBetween(from, to) >= USAGE_MAX_SPAN_DAYS) {
    throw invalid('from', `A usage range covers at most ${USAGE_MAX_SPAN_DAYS} days.`);
  }
  const filter: UsageFilter = { from, to };
  const providerId = q.string('providerId', 256);
  const modelId = q.string('modelId', 1024);
  const tokenId = q.string('tokenId', 256);
  if (providerId !== undefined) filter.providerId = providerId;
  if (modelId !== undefined) filter.modelId = modelId;
  if (tokenId !== undefined) filter.tokenId = tokenId;
  const serviceAccountId = q.string('serviceAccountId', 256);
  if (serviceAccountId !== undefined) filter.serviceAccountId = serviceAccountId;
  return filter;
}

export function usageRoutes(repo: UsageRepo, now: () => number = Date.now): RouteDef[] {
  function usageRoute(
    name: UsageRouteName,
    answer: (q: QueryReader, f: UsageFilter, limit: number) => object,
  ): RouteDef {
    const spec = USAGE_ROUTES[name];
    const known = [...USAGE_COMMON_PARAMS, ...spec.params];
    return route({
      method: 'GET',
      path: spec.path,
      scope: 'read',
      handle: ({ req }): RouteResult => {
        const q = readQuery(req.query, known);
        const filter = readFilter(q, localDayOf(now()));
        const limit = spec.limit === null ? 0 : q.int('limit', 1, spec.limit.max, spec.limit.default);
        return { body: { from: filter.from, to: filter.to, ...answer(q, filter, limit) } };
      },
    });
  }

  return [
    usageRoute('summary', (_q, f) => repo.summary(f)),
    usageRoute('daily', (_q, f) => ({ data: repo.daily(f) })),
    usageRoute('breakdown', (q, f, limit) => {
      const groupBy = q.oneOf('groupBy', USAGE_GROUP_BY) ?? DEFAULT_USAGE_GROUP_BY;
      return { groupBy, ...repo.breakdown(f, groupBy, limit) };
    }),
    usageRoute('tools', (_q, f, limit) => repo.tools(f, limit)),
    usageRoute('routes', (_q, f, limit) => repo.routes(f, limit)),
    usageRoute('acceleration', (_q, f, limit) => repo.acceleration(f, limit)),
  ];
}
