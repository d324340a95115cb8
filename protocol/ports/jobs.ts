import type { EventType, Subscriber } from '../events.ts';
import type { JobFilter, JobRecord } from '../jobs.ts';
import { methodsOf } from './methods.ts';

// Jobs and the event bus as the edge reaches them. A subscription is described as data (which events, from
// where); the Subscriber it returns is read where the edge runs.

export interface JobsPort {
  list(filter: JobFilter): { data: JobRecord[]; hasMore: boolean } | Promise<{ data: JobRecord[]; hasMore: boolean }>;
  get(id: string): JobRecord | Promise<JobRecord>;
  cancel(id: string): JobRecord | Promise<JobRecord>;
  /** The job's terminal event ID, or null while it runs (or for an unknown job). */
  terminalEventId(id: string): number | null | Promise<number | null>;
}

export interface EventSubscription {
  /**
   * A `Last-Event-ID`: replay the ring's events after it (after a `reset` event when the ring no longer reaches
   * back to it). Null: replay the whole ring when `replayAll`, else only events published from now on.
   */
  after: number | null;
  replayAll?: boolean;
  /** Only events of these types; absent or null for every type. */
  types?: readonly EventType[] | null;
  /** Only this job's events; the subscription ends with `done` after the job's terminal event. */
  jobId?: string;
}

export interface EventsPort {
  /** The newest event ID issued. */
  lastId(): number | Promise<number>;
  /** Whether `id` is still in the replay ring. */
  holds(id: number): boolean | Promise<boolean>;
  subscribe(subscription: EventSubscription): Subscriber | Promise<Subscriber>;
}

export const JOBS_METHODS = methodsOf<JobsPort>()(['list', 'get', 'cancel', 'terminalEventId']);
