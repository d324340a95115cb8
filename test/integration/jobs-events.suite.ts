import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openLiveStream, type LiveStream, type WireEvent } from '../fakes/sse-client.ts';
import { writeTinyModel } from '../helpers/gguf.ts';
import { tempHome, type Reply } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Model load and unload run as jobs whose moves arrive as server-sent events, on the job's own stream and on
// the service-wide one, and a stream dropped mid-way resumes with Last-Event-ID where it stopped.

let svc: InProcessService;

function openStream(path: string, headers: Record<string, string> = {}): Promise<LiveStream> {
  return openLiveStream({ port: svc.port, path, headers: { authorization: `Bearer ${svc.adminToken}`, ...headers } });
}

async function readAll(stream: LiveStream): Promise<WireEvent[]> {
  const all: WireEvent[] = [];
  for (let e = await stream.next(); e !== null; e = await stream.next()) all.push(e);
  return all;
}

function assertError(reply: Reply, status: number, code: string, param: string | null): void {
  assert.equal(reply.status, status, reply.text);
  assert.equal(reply.json.error.code, code, reply.text);
  assert.equal(reply.json.error.param, param, reply.text);
}

before(async () => {
  const home = tempHome();
  mkdirSync(join(home, 'models'), { recursive: true });
  writeTinyModel(join(home, 'models', 'tiny.gguf'));
  svc = await startInProcess({ home });
  const patched = await svc.request('PATCH', '/v1/settings', {
    body: { runtime: { tuning: { contextSize: 256, threads: 1, parallel: 1 } } },
  });
  assert.equal(patched.status, 200, patched.text);
});
after(async () => {
  await svc?.stop();
});

describe('a load job over server-sent events', () => {
  let jobId = '';
  let everything: LiveStream;

  test('the action answers 202 with the queued job', async () => {
    everything = await openStream('/v1/events?types=model.loaded,model.unloaded,job.succeeded');
    assert.equal(everything.status, 200);
    const reply = await svc.request('POST', '/v1/catalog/models/embedded%2Ftiny.gguf/actions/load');
    assert.equal(reply.status, 202, reply.text);
    assert.deepEqual(
      { kind: reply.json.kind, subject: reply.json.subject, state: reply.json.state, progress: reply.json.progress },
      { kind: 'load', subject: 'embedded/tiny.gguf', state: 'queued', progress: 0 },
    );
    assert.match(reply.json.id, /^job_[0-9A-Z]{26}$/);
    jobId = reply.json.id;
  });

  test(
    'progress and completion arrive on the job stream; a dropped stream resumes with exactly the missed ' + 'events',
    async () => {
      const first = await openStream(`/v1/jobs/${jobId}/events`);
      assert.equal(first.status, 200);
      assert.match(first.contentType, /^text\/event-stream/);
      const seen = [(await first.next())!, (await first.next())!];
      first.close();
      assert.deepEqual(
        seen.map((e) => [e.event, e.data.state]),
        [
          ['job.created', 'queued'],
          ['job.progress', 'running'],
        ],
      );
      const resumed = await readAll(await openStream(`/v1/jobs/${jobId}/events`, { 'last-event-id': seen[1]!.id! }));
      const whole = await readAll(await openStream(`/v1/jobs/${jobId}/events`));
      assert.deepEqual([...seen, ...resumed], whole);
      const last = resumed[resumed.length - 1]!;
      assert.equal(last.event, 'job.succeeded');
      assert.deepEqual(
        { progress: last.data.progress, modelId: last.data.result.loaded.modelId, error: last.data.error },
        { progress: 1, modelId: 'embedded/tiny.gguf', error: null },
      );
      // llama.cpp's load progress, in steps, never backwards, reaching 1 before the job succeeds.
      const steps = whole.filter((e) => e.event === 'job.progress').map((e) => e.data.progress as number);
      assert.ok(
        steps.some((p) => p > 0 && p < 1),
        JSON.stringify(steps),
      );
      assert.deepEqual(
        [...steps].sort((a, b) => a - b),
        steps,
      );
      assert.equal(steps[steps.length - 1], 1);
      const ids = whole.map((e) => Number(e.id));
      assert.deepEqual(
        [...ids].sort((a, b) => a - b),
        ids,
      );
      assert.equal(new Set(ids).size, ids.length);
      // Resuming after the terminal event: nothing is left, the stream ends at once.
      assert.deepEqual(await readAll(await openStream(`/v1/jobs/${jobId}/events`, { 'last-event-id': last.id! })), []);
    },
  );

  test('the service-wide stream saw the model load, filtered by type', async () => {
    const got = [(await everything.next())!, (await everything.next())!];
    assert.deepEqual(got.map((e) => e.event).sort(), ['job.succeeded', 'model.loaded']);
    assert.equal(got.find((e) => e.event === 'model.loaded')!.data.modelId, 'embedded/tiny.gguf');
  });

  test('an unload with wait=true answers its result, and the stream hears model.unloaded', async () => {
    const reply = await svc.request('POST', '/v1/catalog/models/embedded%2Ftiny.gguf/actions/unload?wait=true');
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.json.wasLoaded, true);
    const got = [(await everything.next())!, (await everything.next())!];
    assert.deepEqual(got.map((e) => e.event).sort(), ['job.succeeded', 'model.unloaded']);
    assert.deepEqual(got.find((e) => e.event === 'model.unloaded')!.data, {
      modelId: 'embedded/tiny.gguf',
      reason: 'action',
    });
    everything.close();
  });

  test('a call that loads the model on first use publishes model.loaded once, with cause call', async () => {
    const stream = await openStream('/v1/events?types=model.loaded');
    const call = () =>
      svc.request('POST', '/v1/chat/completions', {
        body: { model: 'embedded/tiny.gguf', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] },
      });
    assert.equal((await call()).status, 200);
    const loaded = (await stream.next())!;
    assert.deepEqual(
      [loaded.event, loaded.data],
      ['model.loaded', { modelId: 'embedded/tiny.gguf', loaded: null, cause: 'call' }],
    );
    // Already loaded: the next call publishes nothing; the unload that follows is the next event anywhere.
    assert.equal((await call()).status, 200);
    stream.close();
    const after = await openStream('/v1/events?types=model.loaded,model.unloaded', { 'last-event-id': loaded.id! });
    assert.equal(
      (await svc.request('POST', '/v1/catalog/models/embedded%2Ftiny.gguf/actions/unload?wait=true')).status,
      200,
    );
    assert.equal((await after.next())!.event, 'model.unloaded');
    after.close();
  });

  test('jobs are listed newest first and filtered; a finished job cannot be cancelled', async () => {
    const list = await svc.request('GET', '/v1/jobs');
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.json.data.map((j: { kind: string; state: string }) => [j.kind, j.state]),
      [
        ['unload', 'succeeded'],
        ['unload', 'succeeded'],
        ['load', 'succeeded'],
      ],
    );
    assert.deepEqual([list.json.limit, list.json.offset, list.json.hasMore], [50, 0, false]);
    const loads = await svc.request('GET', '/v1/jobs?kind=load&state=succeeded&limit=1');
    assert.deepEqual(
      loads.json.data.map((j: { id: string }) => j.id),
      [jobId],
    );
    assert.equal((await svc.request('GET', '/v1/jobs?state=running')).json.data.length, 0);
    const one = await svc.request('GET', `/v1/jobs/${jobId}`);
    assert.equal(one.json.state, 'succeeded');
    assert.ok(one.json.startedAt && one.json.endedAt && one.json.createdAt);
    const cancel = await svc.request('POST', `/v1/jobs/${jobId}/cancel`);
    assertError(cancel, 409, 'CONFLICT', 'id');
    assert.equal(cancel.json.error.details.state, 'succeeded');
  });
});

describe('bad input', () => {
  test('list filters and bounds are refused, not clamped', async () => {
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['offset=-1', 'offset'],
      ['state=done', 'state'],
      ['kind=pull', 'kind'],
      ['x=1', 'x'],
    ]) {
      assertError(await svc.request('GET', `/v1/jobs?${query}`), 400, 'INVALID_REQUEST', param!);
    }
    assertError(await svc.request('GET', '/v1/events?types=job.created,nope'), 400, 'INVALID_REQUEST', 'types');
    assertError(await svc.request('GET', '/v1/events?types='), 400, 'INVALID_REQUEST', 'types');
    assertError(
      await svc.request('POST', '/v1/catalog/models/embedded%2Ftiny.gguf/actions/load?wait=yes'),
      400,
      'INVALID_REQUEST',
      'wait',
    );
  });

  test('unknown and oversized job IDs are 404 on every job route', async () => {
    for (const id of ['job_00000000000000000000000000', 'x'.repeat(600), '%E2%9C%93']) {
      for (const [method, path] of [
        ['GET', `/v1/jobs/${id}`],
        ['POST', `/v1/jobs/${id}/cancel`],
        ['GET', `/v1/jobs/${id}/events`],
      ]) {
        assertError(await svc.request(method!, path!), 404, 'NOT_FOUND', 'id');
      }
    }
  });

  test(
    'a Last-Event-ID that is not one of ours is 400; one older than the ring starts with a reset ' + 'event',
    async () => {
      for (const bad of ['abc', '-5', '1'.repeat(17)]) {
        assertError(
          await svc.request('GET', '/v1/events', { headers: { 'last-event-id': bad } }),
          400,
          'INVALID_REQUEST',
          'Last-Event-ID',
        );
      }
      const stream = await openStream('/v1/events?types=job.created', { 'last-event-id': '1' });
      const reset = (await stream.next())!;
      assert.equal(reset.event, 'reset');
      assert.equal(reset.data.lastEventId, '1');
      assert.equal((await stream.next())!.event, 'job.created');
      stream.close();
    },
  );

  test('reading needs a token; cancelling needs manage', async () => {
    assert.equal((await svc.request('GET', '/v1/events', { token: null })).status, 401);
    const created = await svc.request('POST', '/v1/tokens', { body: { name: 'reader', scopes: ['read'] } });
    svc.markSecretBearing(created);
    const reader = created.json.secret as string;
    assert.equal((await svc.request('GET', '/v1/jobs', { token: reader })).status, 200);
    assert.equal((await svc.request('POST', '/v1/jobs/job_x/cancel', { token: reader })).status, 403);
  });
});

describe('the access log', () => {
  test(
    'a client that leaves an event stream is logged as client_aborted (the route registers its own abort ' +
      'callback)',
    async () => {
      const stream = await openStream('/v1/events?types=job.created');
      // The `: open` comment arrived with the head; the stream is live on the service's side.
      stream.close();
      const line = await svc.waitForLog(
        (l) => l.msg === 'request' && l.route === 'GET /v1/events' && l.outcome === 'client_aborted',
      );
      assert.equal(line.status, 200);
    },
  );
});

describe('shutdown', () => {
  test('open event streams end at shutdown instead of holding the drain', async () => {
    const stream = await openStream('/v1/events');
    const code = await svc.stop();
    assert.equal(await stream.next(), null);
    assert.equal(code, 0);
    assert.equal(
      svc.logLines().some((l) => l.msg === 'shutting down with requests still in flight'),
      false,
    );
  });
});
