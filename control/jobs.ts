import { ServiceError, toServiceError } from '../protocol/errors.ts';
import { newId } from '../protocol/ids.ts';
import type { EventBus } from './events.ts';
import {
  TERMINAL_STATES,
  type JobError,
  type JobFilter,
  type JobKind,
  type JobRecord,
  type JobState,
} from '../protocol/jobs.ts';

// Long operations (model load, unload and benchmark today; pull and service start later) as jobs: kept in
// memory, since a job cannot outlive the process that runs it. Every move is published on the event bus.
// Bounded: at most MAX_ACTIVE jobs queued or running (beyond that 503 OVERLOADED), and the newest KEEP_FINISHED
// finished ones.

export {
  JOB_KINDS,
  JOB_STATES,
  TERMINAL_STATES,
  type JobError,
  type JobKind,
  type JobRecord,
  type JobState,
} from '../protocol/jobs.ts';

export interface JobContext {
  /** Fires when the job is cancelled. */
  signal: AbortSignal;
  progress(fraction: number): void;
}

export interface JobSpec {
  kind: JobKind;
  subject: string | null;
  /** Without it a running job cannot be cancelled (409). */
  cancellable: boolean;
  run(ctx: JobContext): Promise<unknown>;
}

export type { JobFilter };

const MAX_ACTIVE = 64;
const KEEP_FINISHED = 200;
const SUBJECT_MAX = 512;
/** Progress events closer together than this change are not published: a load reports hundreds of steps. */
const PROGRESS_STEP = 0.01;

interface Entry {
  record: JobRecord;
  spec: JobSpec;
  abort: AbortController;
  /** The event ID of the terminal event, once there is one. */
  terminalEventId: number | null;
  done: Promise<void>;
  settle(): void;
}

export function createJobs(
  bus: EventBus,
  limits: { maxActive?: number; keepFinished?: number; onInternal?(err: unknown): void } = {},
) {
  const maxActive = limits.maxActive ?? MAX_ACTIVE;
  const keepFinished = limits.keepFinished ?? KEEP_FINISHED;
  // Insertion order is creation order; finished jobs leave from the oldest.
  const jobs = new Map<string, Entry>();
  let active = 0;
  let finished = 0;

  const iso = () => new Date().toISOString();
  const view = (e: Entry): JobRecord => ({ ...e.record });

  function publish(
    e: Entry,
    type: 'job.created' | 'job.progress' | 'job.succeeded' | 'job.failed' | 'job.cancelled',
  ): number {
    return bus.publish(type, view(e), e.record.id).id;
  }

  function finish(
    e: Entry,
    state: 'succeeded' | 'failed' | 'cancelled',
    outcome: { result?: unknown; error?: JobError },
  ): void {
    if (TERMINAL_STATES.includes(e.record.state)) return;
    Object.assign(e.record, { state, endedAt: iso(), result: outcome.result ?? null, error: outcome.error ?? null });
    if (state === 'succeeded') e.record.progress = 1;
    active--;
    finished++;
    e.terminalEventId = publish(e, `job.${state}`);
    e.settle();
    for (const [id, old] of jobs) {
      if (finished <= keepFinished) break;
      if (!TERMINAL_STATES.includes(old.record.state)) continue;
      jobs.delete(id);
      finished--;
    }
  }

  function must(id: string): Entry {
    const e = id.length <= 64 ? jobs.get(id) : undefined;
    if (!e) throw new ServiceError('NOT_FOUND', `No job with ID \`${id.slice(0, 64)}\`.`, { param: 'id' });
    return e;
  }

  return {
    start(spec: JobSpec): JobRecord {
      if (active >= maxActive)
        throw new ServiceError(
          'OVERLOADED',
          `${maxActive} jobs are already queued or running; try again when one ends.`,
        );
      const e = newEntry(spec);
      jobs.set(e.record.id, e);
      active++;
      publish(e, 'job.created');
      const created = view(e);
      // Runs on the next turn: the creator answers with the queued record and its client can subscribe first.
      setImmediate(() => {
        if (e.record.state !== 'queued') return;
        e.record.state = 'running';
        e.record.startedAt = iso();
        publish(e, 'job.progress');
        const ctx: JobContext = {
          signal: e.abort.signal,
          progress(fraction) {
            const p = Math.min(1, Math.max(0, fraction));
            if (e.record.state !== 'running' || p - e.record.progress < PROGRESS_STEP) return;
            e.record.progress = p;
            publish(e, 'job.progress');
          },
        };
        spec.run(ctx).then(
          (result) => finish(e, 'succeeded', { result }),
          (err: unknown) => {
            // An unknown throw becomes INTERNAL (its message stays in the log, never in the record).
            if (!(err instanceof ServiceError)) limits.onInternal?.(err);
            const { code, message, param, details } = toServiceError(err);
            finish(e, 'failed', { error: { code, message, param, details } });
          },
        );
      });
      return created;
    },

    get: (id: string): JobRecord => view(must(id)),

    /** Newest first. */
    list(filter: JobFilter): { data: JobRecord[]; hasMore: boolean } {
      const matching = [...jobs.values()].reverse().filter((e) => matches(e.record, filter));
      return {
        data: matching.slice(filter.offset, filter.offset + filter.limit).map(view),
        hasMore: matching.length > filter.offset + filter.limit,
      };
    },

    cancel(id: string): JobRecord {
      const e = must(id);
      checkCancellable(e);
      finish(e, 'cancelled', {});
      e.abort.abort();
      return view(e);
    },

    /** Resolves with the record once the job has ended. */
    async settled(id: string): Promise<JobRecord> {
      const e = must(id);
      await e.done;
      return view(e);
    },

    /** The job's terminal event ID, or null while it runs (or for an unknown job). */
    terminalEventId: (id: string): number | null => jobs.get(id)?.terminalEventId ?? null,
    isTerminal: (state: JobState) => TERMINAL_STATES.includes(state),
  };
}

export type Jobs = ReturnType<typeof createJobs>;

function newEntry(spec: JobSpec): Entry {
  let settle!: () => void;
  const done = new Promise<void>((r) => (settle = r));
  return {
    record: {
      id: newId('job_'),
      kind: spec.kind,
      subject: spec.subject === null ? null : spec.subject.slice(0, SUBJECT_MAX),
      state: 'queued',
      progress: 0,
      result: null,
      error: null,
      createdAt: new Date().toISOString(),
      startedAt: null,
      endedAt: null,
    },
    spec,
    abort: new AbortController(),
    terminalEventId: null,
    done,
    settle,
  };
}

function checkCancellable(e: Entry): void {
  const state = e.record.state;
  if (TERMINAL_STATES.includes(state))
    throw new ServiceError('CONFLICT', `Job \`${e.record.id}\` is already ${state}.`, {
      param: 'id',
      details: { state },
    });
  if (state === 'running' && !e.spec.cancellable)
    throw new ServiceError('CONFLICT', `A running ${e.spec.kind} job cannot be cancelled.`, {
      param: 'id',
      details: { state },
    });
}

function matches(r: JobRecord, filter: JobFilter): boolean {
  return (
    (filter.state === undefined || r.state === filter.state) && (filter.kind === undefined || r.kind === filter.kind)
  );
}

/**
 * How an action that runs as a job answers: 202 with the queued job, or with `wait` the job's result once it
 * succeeded, its error once it failed, and 409 when it was cancelled first.
 */
export async function answerJob(jobs: Jobs, job: JobRecord, wait: boolean): Promise<{ status: number; body: unknown }> {
  if (!wait) return { status: 202, body: job };
  const ended = await jobs.settled(job.id);
  if (ended.state === 'succeeded') return { status: 200, body: ended.result };
  if (ended.error)
    throw new ServiceError(ended.error.code, ended.error.message, {
      param: ended.error.param,
      details: ended.error.details,
    });
  throw new ServiceError('CONFLICT', `Job \`${job.id}\` was ${ended.state} before it finished.`, {
    details: { jobId: job.id, state: ended.state },
  });
}
