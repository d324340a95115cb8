import type { ServiceActionRunner } from '../protocol/ports/runtime.ts';
import { answerJob, type Jobs } from './jobs.ts';
import type { Services } from './services.ts';

// POST /v1/services/{id}/actions/{action} once the route has read the action: `stop` answers the service;
// start and restart are jobs (a model may load for minutes): 202 with the job, or with `wait=true` the
// service once it is healthy.

export function serviceActions(services: Services, jobs: Jobs): ServiceActionRunner {
  return async (id, action, actor, requestId, wait) => {
    if (action === 'stop') return { status: 200, body: await services.stop(id, actor, requestId) };
    const { ready } = await (action === 'start'
      ? services.start(id, actor, requestId)
      : services.restart(id, actor, requestId));
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
  };
}
