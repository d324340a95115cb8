import { actorOf } from '../../protocol/actor.ts';
import { checkLimitCreate, checkLimitUpdate, checkLoopBrakeUpdate } from '../../protocol/http/limits.ts';
import type { LimitsPort } from '../../protocol/ports/limits.ts';
import { readQuery } from '../../protocol/query.ts';
import { route, type RouteDef } from '../http/router.ts';

// Enforced limits (docs/api.md, Limits): reading them and their counters takes `read`, changing them `manage`.

export function limitRoutes(limits: LimitsPort): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/limits',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        return { body: { data: await limits.list() } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/limits/:id',
      scope: 'read',
      handle: async ({ params }) => ({ body: await limits.get(params.id!) }),
    }),
    route({
      method: 'POST',
      path: '/v1/limits',
      scope: 'manage',
      body: checkLimitCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        body: await limits.create(body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/limits/:id',
      scope: 'manage',
      body: checkLimitUpdate,
      handle: async ({ body, params, principal, requestId }) => ({
        body: await limits.update(params.id!, body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/limits/loop-brake',
      scope: 'read',
      handle: async () => ({ body: await limits.brake.config() }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/limits/loop-brake',
      scope: 'manage',
      body: checkLoopBrakeUpdate,
      handle: async ({ body, principal, requestId }) => ({
        body: await limits.brake.update(body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/limits/sessions',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        return { body: { data: await limits.brake.paused() } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/limits/sessions/:id/resume',
      scope: 'manage',
      handle: async ({ params, principal, requestId }) => ({
        body: { ...(await limits.brake.resume(params.id!, actorOf(principal), requestId)), resumed: true },
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/limits/:id',
      scope: 'manage',
      handle: async ({ params, principal, requestId }) => {
        await limits.remove(params.id!, actorOf(principal), requestId);
        return { body: { id: params.id, deleted: true } };
      },
    }),
  ];
}
