import { FAMILIES } from '../../protocol/families.ts';
import { checkRoutePackCreate, checkRoutePackUpdate } from '../../protocol/http/route-packs.ts';
import { readQuery } from '../../protocol/query.ts';
import { actorOf } from '../../protocol/actor.ts';
import { route, type RouteDef } from '../http/router.ts';
import type { RoutePacksPort } from '../../protocol/ports/smart-route.ts';
import type { Decision } from '../../protocol/smart-route.ts';

/** The decision without its attempt list, which holds provider records: only IDs and reasons leave. */
function decisionView({ attempts: _attempts, ...view }: Decision) {
  return view;
}

export function routePackRoutes(packs: RoutePacksPort): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/route-packs',
      scope: 'read',
      handle: async () => ({ body: { data: await packs.list() } }),
    }),
    route({
      method: 'POST',
      path: '/v1/route-packs',
      scope: 'manage',
      body: checkRoutePackCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        body: await packs.create(body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/route-packs/:slug',
      scope: 'read',
      handle: async ({ params }) => ({ body: await packs.get(params.slug!) }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/route-packs/:slug',
      scope: 'manage',
      body: checkRoutePackUpdate,
      handle: async ({ body, params, principal, requestId }) => ({
        body: await packs.update(params.slug!, body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/route-packs/:slug',
      scope: 'manage',
      handle: async ({ params, principal, requestId }) => {
        await packs.remove(params.slug!, actorOf(principal), requestId);
        return { body: { slug: params.slug, deleted: true } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/route-packs/:slug/decision',
      scope: 'read',
      handle: async ({ params, req }) => {
        const q = readQuery(req.query, ['family']);
        return {
          body: {
            ...decisionView(await packs.decide(params.slug!, q.oneOf('family', FAMILIES))),
            at: new Date().toISOString(),
          },
        };
      },
    }),
  ];
}
