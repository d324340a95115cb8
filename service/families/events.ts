import { createEventBus, eventsPort, type EventBus } from '../../control/events.ts';
import { createJobs, type Jobs } from '../../control/jobs.ts';
import { jobRoutes } from '../../edge/routes/jobs.ts';
import type { Built, Family } from '../family.ts';
import type { Base } from '../parts.ts';
import { JOBS_METHODS, type JobsPort } from '../../protocol/ports/jobs.ts';

export interface EventsParts {
  bus: EventBus;
  jobs: Jobs;
}

/** Job progress, model loads and unloads, service states and Gauge alerts, for GET /v1/events and job streams. */
export function eventsFamily(p: Base): Built<EventsParts> {
  const bus = createEventBus();
  const jobs = createJobs(bus, {
    onInternal: (err) => p.log.error({ err: String(err).slice(0, 500) }, 'a job failed with an internal error'),
  });
  const family: Family = {
    routes: () => [...jobRoutes({ jobs: p.control.port<JobsPort>('jobs', jobs, JOBS_METHODS), bus: eventsPort(bus) })],
    // Event streams never end by themselves: end them now, or the drain would wait its whole time on them.
    drain: () => bus.close(),
  };
  return { family, parts: { bus, jobs } };
}
