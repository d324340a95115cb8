import { GAUGE_LIMITS } from '../../protocol/gauge-catalog.ts';
import { ALERT_DELIVERY_STATES, ALERT_EVENT_STATES } from '../../protocol/gauge-money.ts';
import {
  checkGaugeAlertDeliveryUpdate,
  checkGaugeAlertRuleCreate,
  checkGaugeAlertRuleUpdate,
  GAUGE_ALERT_EVENTS_QUERY,
  type GaugeAlertEventPage,
} from '../../protocol/http/gauge-alerts.ts';
import { readQuery } from '../../protocol/query.ts';
import { actorOf } from '../../protocol/actor.ts';
import { checkId, type GaugeSettings } from '../../protocol/gauge-sources.ts';
import type { GaugeAlertsPort } from '../../protocol/ports/gauge.ts';
import { route, type RouteDef } from '../http/router.ts';

// Gauge's alert routes (docs/api.md, Gauge). Rules are setup: they read and
// write while Gauge is off. Events are what Gauge noticed: the list answers `enabled: false` and no data while
// it is off, and is evaluated just before it answers, so a reader never sees a stale list.

export function gaugeAlertRoutes(alerts: GaugeAlertsPort, settings: () => GaugeSettings): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/gauge/alert-rules',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        return { body: { data: await alerts.rules() } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/gauge/alert-rules',
      scope: 'manage',
      body: checkGaugeAlertRuleCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        body: await alerts.createRule(body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/gauge/alert-rules/:id',
      scope: 'manage',
      body: checkGaugeAlertRuleUpdate,
      handle: async ({ body, params, principal, requestId }) => ({
        body: await alerts.updateRule(params.id!, body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/gauge/alert-rules/:id',
      scope: 'manage',
      handle: async ({ params, principal, requestId }) => {
        const events = await alerts.removeRule(params.id!, actorOf(principal), requestId);
        return { body: { id: params.id, deleted: true, events } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/gauge/alert-events',
      scope: 'read',
      handle: async ({ req }) => {
        const q = readQuery(req.query, GAUGE_ALERT_EVENTS_QUERY);
        const filter = {
          ruleId: q.string('ruleId', GAUGE_LIMITS.idMax),
          accountId: q.string('accountId', GAUGE_LIMITS.idMax),
          providerId: q.string('providerId', GAUGE_LIMITS.idMax),
          state: q.oneOf('state', ALERT_EVENT_STATES),
          delivery: q.oneOf('delivery', ALERT_DELIVERY_STATES),
          after: q.dateTime('after'),
          before: q.dateTime('before'),
        };
        const limit = q.int('limit', 1, GAUGE_LIMITS.pageMax, GAUGE_LIMITS.pageDefault);
        const offset = q.int('offset', 0, GAUGE_LIMITS.offsetMax, 0);
        if (!settings().enabled)
          return { body: { enabled: false, data: [], limit, offset, hasMore: false } satisfies GaugeAlertEventPage };
        // A failed evaluation is logged; the reader still gets what is stored.
        await alerts.evaluateQuietly();
        const page = await alerts.listEvents(filter, limit, offset);
        return { body: { enabled: true, ...page, limit, offset } satisfies GaugeAlertEventPage };
      },
    }),
    route({
      method: 'PATCH',
      path: '/v1/gauge/alert-events/:id',
      scope: 'manage',
      body: checkGaugeAlertDeliveryUpdate,
      handle: async ({ body, params }) => ({ body: await alerts.moveEvent(checkId(params.id!), body) }),
    }),
  ];
}
