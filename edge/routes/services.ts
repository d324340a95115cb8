import { SERVICE_ACTIONS } from '../../protocol/actions.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { checkServiceCreate } from '../../protocol/http/services.ts';
import { readQuery } from '../../protocol/query.ts';
import { actorOf } from '../../protocol/actor.ts';
import type { ServiceActionRunner, ServicesPort } from '../../protocol/ports/runtime.ts';
import { route, type RouteDef } from '../http/router.ts';

// Supervised runtime processes. Creating one runs an executable, so it needs `admin`; starting and stopping
// an existing one is `manage`, as loading a model is. Start and restart are jobs (a model may load for
// minutes): 202 with the job, or with `wait=true` the service once it is healthy.

export function serviceRoutes(services: ServicesPort, runAction: ServiceActionRunner): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/services',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        return { body: { data: await services.list() } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/services',
      scope: 'admin',
      body: checkServiceCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        body: await services.create(body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/services/:id',
      scope: 'read',
      handle: async ({ req, params }) => {
        readQuery(req.query, []);
        return { body: await services.get(params.id!) };
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/services/:id',
      scope: 'admin',
      handle: async ({ params, principal, requestId }) => {
        const gone = await services.remove(params.id!, actorOf(principal), requestId);
        return { body: { id: gone.id, deleted: true } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/services/:id/actions/:action',
      scope: 'manage',
      handle: async ({ req, params, principal, requestId }) => {
        const wait = readQuery(req.query, ['wait']).oneOf('wait', ['true', 'false'] as const) === 'true';
        const action = SERVICE_ACTIONS.find((a) => a === params.action);
        if (action === undefined)
          throw new ServiceError('INVALID_REQUEST', `Service actions are ${SERVICE_ACTIONS.join(', ')}.`, {
            param: 'action',
          });
        return runAction(params.id!, action, actorOf(principal), requestId, wait);
      },
    }),
  ];
}
