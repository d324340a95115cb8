import { checkGaugeAuthSessionCreate } from '../../protocol/http/gauge-auth-sessions.ts';
import { readQuery } from '../../protocol/query.ts';
import { actorOf } from '../../protocol/actor.ts';
import type { GaugeAuthSessionsPort } from '../../protocol/ports/gauge.ts';
import { route, type RouteDef } from '../http/router.ts';

// Gauge auth sessions (docs/api.md, Gauge): POST starts a device flow and answers once the provider has
// issued the codes (or refused); GET reads it; DELETE cancels it. Writes need `manage`, reads `read`.

export function gaugeAuthSessionRoutes(sessions: GaugeAuthSessionsPort): RouteDef[] {
  return [
    route({
      method: 'POST',
      path: '/v1/gauge/auth-sessions',
      scope: 'manage',
      body: checkGaugeAuthSessionCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        body: await sessions.create(body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/gauge/auth-sessions/:id',
      scope: 'read',
      handle: async ({ req, params }) => {
        readQuery(req.query, []);
        return { body: await sessions.get(params.id!) };
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/gauge/auth-sessions/:id',
      scope: 'manage',
      handle: async ({ params }) => ({ body: await sessions.cancel(params.id!) }),
    }),
  ];
}
