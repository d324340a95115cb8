import { createEventBus, eventsPort } from '../../control/events.ts';
import { createJobs } from '../../control/jobs.ts';
import { jobRoutes } from '../../edge/routes/jobs.ts';
import type { Family } from '../family.ts';
import type { Parts } from '../parts.ts';
import { JOBS_METHODS, type JobsPort } from '../../protocol/ports/jobs.ts';

/** Job progress, model loads and unloads, service states and Gauge alerts, for GET /v1/events and job streams. */
export function eventsFamily(p: Parts): Family {
  p.bus = createEventBus();
  p.jobs = createJobs(p.bus, {
    onInternal: (err) => p.log.error({ err: String(err).slice(0, 500) }, 'a job failed with an internal error'),
  });
  return {
    routes: () => [
      ...jobRoutes({ jobs: p.control.port<JobsPort>('jobs', p.jobs, JOBS_METHODS), bus: eventsPort(p.bus) }),
    ],
    // Event streams never end by themselves: end them now, or the drain would wait its whole time on them.
    drain: () => p.bus.close(),
  };
}
