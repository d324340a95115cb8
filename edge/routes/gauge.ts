import { ServiceError } from '../../protocol/errors.ts';
import { GAUGE_LIMITS, GAUGE_PROVIDERS } from '../../protocol/gauge-catalog.ts';
import {
  checkGaugeAccountCreate,
  checkGaugeAccountUpdate,
  checkGaugeRefreshRequest,
  checkGaugeSourceUpdate,
  GAUGE_READINGS_QUERY,
  type GaugeDashboard,
} from '../../protocol/http/gauge.ts';
import { readQuery } from '../../protocol/query.ts';
import type { GaugeDataRepo } from '../../store/gauge-data-repo.ts';
import type { GaugeSourceRepo } from '../../store/gauge-source-repo.ts';
import { actorOf } from '../../protocol/actor.ts';
import { mayRedirectCredentials } from '../../protocol/credential-redirect.ts';
import { checkId, isAccount, type GaugeSettings } from '../../protocol/gauge-sources.ts';
import type { GaugePort } from '../../protocol/ports/gauge.ts';
import { accountSummary, diagnostic, historySince, latestReadings, sourceSummary } from './gauge-views.ts';
import { route, type RouteDef } from '../http/router.ts';

// Gauge's routes (docs/api.md, Gauge). Setup (providers, accounts, sources) reads and writes while Gauge is
// off, so a person can connect accounts before opting in; what Gauge collected answers `enabled: false` and no
// data while it is off; a refresh is 409 GAUGE_DISABLED. Reads never wait on a collector: they read LMDB.

export interface GaugeRouteDeps {
  service: GaugePort;
  sources: GaugeSourceRepo;
  data: GaugeDataRepo;
  settings(): GaugeSettings;
}

const DAY_MS = 86_400_000;

/** Gauge's routes: the dashboard, setup (gaugeSetupRoutes), what Gauge collected, refresh and history. */
export function gaugeRoutes({ service, sources, data, settings }: GaugeRouteDeps): RouteDef[] {
  const enabled = () => settings().enabled;
  const accounts = () => sources.all().filter(isAccount);

  return [
    route({
      method: 'GET',
      path: '/v1/gauge',
      scope: 'read',
      handle: ({ req }) => {
        const q = readQuery(req.query, ['since']);
        const since = q.dateTime('since') ?? Date.now() - GAUGE_LIMITS.historyDefaultDays * DAY_MS;
        const body: GaugeDashboard = {
          enabled: enabled(),
          since: new Date(since).toISOString(),
          accounts: [],
          readings: [],
          statuses: [],
          history: [],
          historyTruncated: false,
        };
        if (!body.enabled) return { body };
        const all = sources.all();
        body.accounts = all.filter(isAccount).map((r) => accountSummary(r, data));
        body.readings = latestReadings(data, {});
        body.statuses = data.statuses();
        const { points, truncated } = historySince(
          data,
          since,
          all.map((s) => s.id),
        );
        body.history = points;
        body.historyTruncated = truncated;
        return { body };
      },
    }),
    ...gaugeSetupRoutes({ service, sources, data, settings }),
    route({
      method: 'GET',
      path: '/v1/gauge/readings',
      scope: 'read',
      handle: ({ req }) => {
        const q = readQuery(req.query, GAUGE_READINGS_QUERY);
        const filter = {
          providerId: q.string('providerId', GAUGE_LIMITS.idMax),
          accountId: q.string('accountId', GAUGE_LIMITS.idMax),
          after: q.dateTime('after'),
          before: q.dateTime('before'),
        };
        const limit = q.int('limit', 1, GAUGE_LIMITS.pageMax, GAUGE_LIMITS.pageDefault);
        const offset = q.int('offset', 0, GAUGE_LIMITS.offsetMax, 0);
        if (!enabled()) return { body: { enabled: false, data: [], limit, offset, hasMore: false } };
        const all = latestReadings(data, filter);
        return {
          body: {
            enabled: true,
            data: all.slice(offset, offset + limit),
            limit,
            offset,
            hasMore: all.length > offset + limit,
          },
        };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/gauge/statuses',
      scope: 'read',
      handle: ({ req }) => {
        readQuery(req.query, []);
        if (!enabled()) return { body: { enabled: false, data: [], accounts: [] } };
        const reach = accounts().map((r) => ({
          accountId: r.id,
          providerId: r.providerId,
          ...accountSummary(r, data).status,
        }));
        return { body: { enabled: true, data: data.statuses(), accounts: reach } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/gauge/diagnostics',
      scope: 'read',
      handle: ({ req }) => {
        readQuery(req.query, []);
        if (!enabled()) return { body: { enabled: false, data: [] } };
        return { body: { enabled: true, data: sources.all().map((r) => diagnostic(r, data)) } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/gauge/refresh',
      scope: 'manage',
      body: checkGaugeRefreshRequest,
      handle: async ({ body }) => ({ body: { data: await service.refresh(body.sourceIds) } }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/gauge/history',
      scope: 'manage',
      handle: async ({ req, principal, requestId }) => {
        const q = readQuery(req.query, ['sourceId']);
        const sourceId = q.string('sourceId', GAUGE_LIMITS.idMax);
        if (sourceId !== undefined) checkId(sourceId, 'sourceId');
        const deleted = await service.deleteHistory(sourceId, actorOf(principal), requestId);
        return { body: { deleted } };
      },
    }),
  ];
}

/** Setup: the providers Gauge knows, the accounts and the sources, which a person edits while Gauge is off too. */
function gaugeSetupRoutes({ service, sources, data }: GaugeRouteDeps): RouteDef[] {
  const accounts = () => sources.all().filter(isAccount);
  return [
    route({
      method: 'GET',
      path: '/v1/gauge/providers',
      scope: 'read',
      handle: ({ req }) => {
        readQuery(req.query, []);
        return { body: { data: GAUGE_PROVIDERS } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/gauge/accounts',
      scope: 'read',
      handle: ({ req }) => {
        readQuery(req.query, []);
        return { body: { data: accounts().map((r) => accountSummary(r, data)) } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/gauge/accounts',
      scope: 'manage',
      body: checkGaugeAccountCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        body: accountSummary(await service.createAccount(body, actorOf(principal), requestId), data),
      }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/gauge/accounts/:id',
      scope: 'manage',
      body: checkGaugeAccountUpdate,
      handle: async ({ body, params, principal, requestId }) => {
        const current = await service.getAccount(params.id!);
        // Status pages and the live-header tap are sources, not accounts: PUT /v1/gauge/sources/{id} sets them up.
        if (!isAccount(current))
          throw new ServiceError('NOT_FOUND', `No Gauge account with ID \`${current.id}\`; it is a source.`, {
            param: 'id',
          });
        return {
          body: accountSummary(
            await service.updateAccount(
              current.id,
              body,
              actorOf(principal),
              requestId,
              mayRedirectCredentials(principal),
            ),
            data,
          ),
        };
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/gauge/accounts/:id',
      scope: 'manage',
      handle: async ({ params, principal, requestId }) => {
        await service.removeAccount(params.id!, actorOf(principal), requestId);
        return { body: { id: params.id, deleted: true } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/gauge/sources',
      scope: 'read',
      handle: ({ req }) => {
        readQuery(req.query, []);
        return { body: { data: sources.all().map(sourceSummary) } };
      },
    }),
    route({
      method: 'PUT',
      path: '/v1/gauge/sources/:id',
      scope: 'manage',
      body: checkGaugeSourceUpdate,
      handle: async ({ body, params, principal, requestId }) => ({
        body: sourceSummary(
          await service.updateSource(
            params.id!,
            body,
            actorOf(principal),
            requestId,
            mayRedirectCredentials(principal),
          ),
        ),
      }),
    }),
  ];
}
