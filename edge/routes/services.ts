import { SERVICE_ACTIONS } from '../../protocol/actions.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { checkServiceCreate } from '../../protocol/http/services.ts';
import { readQuery } from '../../protocol/query.ts';
import { actorOf } from '../../protocol/actor.ts';
import { answerJob, type Jobs } from '../../control/jobs.ts';
import type { Services } from '../../control/services.ts';
import { route, type RouteDef } from '../http/router.ts';

// Supervised runtime processes. Creating one runs an executable, so it needs `admin`; starting and stopping
// an existing one is `manage`, as loading a model is. Start and restart are jobs (a model may load for
// minutes): 202 with the job, or with `wait=true` the service once it is healthy.

export function serviceRoutes(services: Services, jobs: Jobs): RouteDef[] {
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
      handle: async ({ body, principal, requestId }) => ({ status: 201, body: await services.create(body, actorOf(principal), requestId) }),
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
        if (action === undefined) throw new ServiceError('INVALID_REQUEST', `Service actions are ${SERVICE_ACTIONS.join(', ')}.`, { param: 'action' });
        const id = params.id!;
        const actor = actorOf(principal);
        if (action === 'stop') return { body: await services.stop(id, actor, requestId) };
        const { ready } = await (action === 'start' ? services.start(id, actor, requestId) : services.restart(id, actor, requestId));
        const job = jobs.start({
          kind: 'start',
          subject: id,
          cancellable: false,
          run: async () => {
            await ready;
            return services.get(id);
          },
        });
        return answerJob(jobs, job, wait);
      },
    }),
  ];
}
