import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ServiceError } from '../../protocol/errors.ts';
import { createEventBus } from '../../control/events.ts';
import { createJobs, type JobContext, type JobRecord } from '../../control/jobs.ts';
import { parseSse } from '../fakes/sse-client.ts';

/** A job whose run waits until the test settles it. */
function controlled() {
  let ctx!: JobContext;
  let resolve!: (v: unknown) => void;
  let ready!: () => void;
  const started = new Promise<void>((r) => (ready = r));
  const run = (c: JobContext) => {
    ctx = c;
    ready();
    return new Promise<unknown>((res) => (resolve = res));
  };
  return { run, started, ctx: () => ctx, resolve: (v: unknown) => resolve(v) };
}

const events = (bus: ReturnType<typeof createEventBus>, jobId: string) => {
  const sub = bus.subscribe({ after: null, replayAll: true, filter: (e) => e.jobId === jobId });
  return parseSse(sub.take().join('')).map((e) => ({
    type: e.event,
    ...(JSON.parse(e.data) as { state: string; progress: number }),
  }));
};

describe('job registry', () => {
  test('a job moves queued -> running -> succeeded, publishing each move and its progress', async () => {
    const bus = createEventBus();
    const jobs = createJobs(bus);
    const c = controlled();
    const job = jobs.start({ kind: 'load', subject: 'embedded/a.gguf', cancellable: true, run: c.run });
    assert.equal(job.state, 'queued');
    assert.match(job.id, /^job_[0-9A-HJKMNP-TV-Z]{26}$/);
    await c.started;
    assert.equal(jobs.get(job.id).state, 'running');
    c.ctx().progress(0.5);
    c.ctx().progress(0.501); // below the publishing step
    c.ctx().progress(7); // clamped
    c.resolve({ ok: true });
    const ended = await jobs.settled(job.id);
    assert.deepEqual(
      { state: ended.state, progress: ended.progress, result: ended.result, error: ended.error },
      { state: 'succeeded', progress: 1, result: { ok: true }, error: null },
    );
    assert.ok(ended.startedAt !== null && ended.endedAt !== null);
    assert.deepEqual(
      events(bus, job.id).map((e) => [e.type, e.state, e.progress]),
      [
        ['job.created', 'queued', 0],
        ['job.progress', 'running', 0],
        ['job.progress', 'running', 0.5],
        ['job.progress', 'running', 1],
        ['job.succeeded', 'succeeded', 1],
      ],
    );
    assert.equal(jobs.terminalEventId(job.id), bus.lastId());
  });

  test('a failure keeps the error code and message; an unknown throw is INTERNAL and reported', async () => {
    const internal: unknown[] = [];
    const jobs = createJobs(createEventBus(), { onInternal: (e) => internal.push(e) });
    const a = jobs.start({
      kind: 'load',
      subject: null,
      cancellable: false,
      run: async () => {
        throw new ServiceError('INVALID_REQUEST', 'bad file', { param: 'model' });
      },
    });
    assert.deepEqual((await jobs.settled(a.id)).error, {
      code: 'INVALID_REQUEST',
      message: 'bad file',
      param: 'model',
      details: {},
    });
    const b = jobs.start({
      kind: 'load',
      subject: null,
      cancellable: false,
      run: async () => {
        throw new Error('secret path /home/x');
      },
    });
    const error = (await jobs.settled(b.id)).error!;
    assert.equal(error.code, 'INTERNAL');
    assert.doesNotMatch(error.message, /home/);
    assert.equal(internal.length, 1);
  });

  test('cancel aborts a running job; a finished or uncancellable one is 409 naming its state', async () => {
    const jobs = createJobs(createEventBus());
    const c = controlled();
    const job = jobs.start({ kind: 'load', subject: null, cancellable: true, run: c.run });
    await c.started;
    const cancelled = jobs.cancel(job.id);
    assert.equal(cancelled.state, 'cancelled');
    assert.equal(c.ctx().signal.aborted, true);
    c.resolve('late');
    assert.equal((await jobs.settled(job.id)).result, null);
    const again = (() => {
      try {
        jobs.cancel(job.id);
      } catch (e) {
        return e as ServiceError;
      }
    })();
    assert.deepEqual([again?.code, again?.details], ['CONFLICT', { state: 'cancelled' }]);
    const u = controlled();
    const unload = jobs.start({ kind: 'unload', subject: null, cancellable: false, run: u.run });
    await u.started;
    assert.throws(
      () => jobs.cancel(unload.id),
      (e: ServiceError) => e.code === 'CONFLICT' && e.details.state === 'running',
    );
    // A queued job is cancelled before it runs.
    const q = controlled();
    const queued = jobs.start({ kind: 'unload', subject: null, cancellable: false, run: q.run });
    assert.equal(jobs.cancel(queued.id).state, 'cancelled');
    u.resolve(null);
    assert.throws(
      () => jobs.get('job_missing'),
      (e: ServiceError) => e.code === 'NOT_FOUND' && e.param === 'id',
    );
  });

  test(
    'lists newest first with filters and pages; keeps only the newest finished jobs; bounds active ' + 'ones',
    async () => {
      const jobs = createJobs(createEventBus(), { maxActive: 3, keepFinished: 2 });
      const made: JobRecord[] = [];
      for (let i = 0; i < 3; i++)
        made.push(
          jobs.start({ kind: i === 1 ? 'unload' : 'load', subject: `m${i}`, cancellable: false, run: async () => i }),
        );
      assert.throws(
        () => jobs.start({ kind: 'load', subject: null, cancellable: false, run: async () => null }),
        (e: ServiceError) => e.code === 'OVERLOADED',
      );
      for (const j of made) await jobs.settled(j.id);
      assert.deepEqual(
        jobs.list({ limit: 10, offset: 0 }).data.map((j) => j.subject),
        ['m2', 'm1'],
      );
      assert.deepEqual(
        jobs.list({ kind: 'load', limit: 10, offset: 0 }).data.map((j) => j.subject),
        ['m2'],
      );
      assert.deepEqual(jobs.list({ state: 'running', limit: 10, offset: 0 }).data, []);
      const page = jobs.list({ limit: 1, offset: 0 });
      assert.deepEqual([page.data.map((j) => j.subject), page.hasMore], [['m2'], true]);
      assert.throws(
        () => jobs.get(made[0]!.id),
        (e: ServiceError) => e.code === 'NOT_FOUND',
      );
    },
  );
});
