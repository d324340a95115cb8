import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openLiveStream, type WireEvent } from '../fakes/sse-client.ts';
import { writeCorruptModel, writeTinyModel } from '../helpers/gguf.ts';
import { tempHome, type Reply } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// POST /v1/runtime/placement and the `benchmark` model action on the tiny generated model, behind the real
// service: the estimate's figures from the tensor table, the benchmark job, its kept results, cancelling one,
// and bad input everywhere.

let svc: InProcessService;
let home: string;
const TINY = 'embedded%2Ftiny.gguf';

// The tiny model (test/helpers/gguf.ts): 2 blocks, embd 64, feed-forward 128, vocabulary 260, 4 heads, F32.
const LAYER_BYTES = 2 * 64 * 4 + (4 * 64 * 64 + 3 * 64 * 128) * 4;
const WEIGHTS = 2 * LAYER_BYTES + (64 * 4 + 64 * 260 * 4) + 64 * 260 * 4;
/** f16 K and V of 4 heads of 16, per cell and layer. */
const KV_PER_CELL_LAYER = 2 * 64 * 2;

function assertError(reply: Reply, status: number, code: string, param: string | null): void {
  assert.equal(reply.status, status, reply.text);
  assert.equal(reply.json.error.code, code, reply.text);
  assert.equal(reply.json.error.param, param, reply.text);
}

before(async () => {
  home = tempHome();
  mkdirSync(join(home, 'models'), { recursive: true });
  writeTinyModel(join(home, 'models', 'tiny.gguf'));
  writeCorruptModel(join(home, 'models', 'corrupt.gguf'));
  svc = await startInProcess({ home });
});
after(async () => {
  await svc?.stop();
});

const placement = (body: unknown) => svc.request('POST', '/v1/runtime/placement', { body });
const benchmark = (body?: unknown, wait = true) =>
  svc.request(
    'POST',
    `/v1/catalog/models/${TINY}/actions/benchmark${wait ? '?wait=true' : ''}`,
    body === undefined ? {} : { body },
  );

describe('POST /v1/runtime/placement', () => {
  test('estimates the tiny model from its tensor table, with the settings tuning resolved', async () => {
    const reply = await placement({ model: 'embedded/tiny.gguf' });
    assert.equal(reply.status, 200, reply.text);
    const a = reply.json;
    assert.equal(a.model, 'embedded/tiny.gguf');
    assert.deepEqual(a.gpuLayers, { requested: 0, placed: 0, total: 3 });
    // runtime.tuning is all 0: the model's 2048 tokens per sequence, 4 sequences, a 512-token batch.
    assert.deepEqual(a.tuning, { contextSize: 2048, parallel: 4, batchSize: 512 });
    assert.equal(a.memory.weightsBytes, WEIGHTS);
    assert.equal(a.memory.kvCacheBytes, 2048 * 4 * KV_PER_CELL_LAYER * 2);
    assert.equal(a.memory.gpuBytes, 0);
    assert.equal(a.memory.hostBytes, WEIGHTS + a.memory.kvCacheBytes + a.memory.computeBytes);
    assert.ok(a.memory.computeBytes > 0);
    assert.equal(typeof a.available.ramFreeBytes === 'number' || a.available.ramFreeBytes === null, true);
    assert.ok(['high', 'medium', 'low'].includes(a.confidence));
    assert.ok(Array.isArray(a.reasons) && a.reasons.every((r: unknown) => typeof r === 'string'));
    if (typeof a.available.ramFreeBytes === 'number')
      assert.equal(a.fits, a.memory.hostBytes <= a.available.ramFreeBytes);
    assert.equal(reply.text.includes(home), false, 'the data directory leaked');
  });

  test('takes a library name or the ID without .gguf, and the request tuning over the settings', async () => {
    for (const model of ['tiny.gguf', 'tiny', 'embedded/tiny']) {
      const reply = await placement({ model, tuning: { contextSize: 256, parallel: 1, gpuLayers: 'auto' } });
      assert.equal(reply.status, 200, `${model}: ${reply.text}`);
      assert.deepEqual(reply.json.tuning, { contextSize: 256, parallel: 1, batchSize: 256 });
      assert.equal(reply.json.memory.kvCacheBytes, 256 * KV_PER_CELL_LAYER * 2);
      assert.equal(reply.json.gpuLayers.requested, 'auto');
      assert.ok(reply.json.gpuLayers.placed >= 0 && reply.json.gpuLayers.placed <= 3);
    }
    const many = await placement({ model: 'tiny.gguf', tuning: { gpuLayers: 99 } });
    assert.equal(many.status, 200, many.text);
    assert.equal(many.json.gpuLayers.requested, 99);
    assert.ok(many.json.gpuLayers.placed <= 3);
  });

  test('bad input: unknown model 404, unhealthy file, other kinds and bad tuning 400', async () => {
    assertError(await placement({ model: 'embedded/nope.gguf' }), 404, 'NOT_FOUND', 'model');
    assertError(await placement({ model: '../tiny.gguf' }), 404, 'NOT_FOUND', 'model');
    const corrupt = await placement({ model: 'corrupt.gguf' });
    assertError(corrupt, 400, 'INVALID_REQUEST', 'model');
    assert.equal(corrupt.json.error.details.health, 'corrupt');
    assertError(
      await placement({ model: 'tiny.gguf', tuning: { contextSize: -1 } }),
      400,
      'INVALID_REQUEST',
      'tuning.contextSize',
    );
    assertError(
      await placement({ model: 'tiny.gguf', tuning: { gpuLayers: 'max' } }),
      400,
      'INVALID_REQUEST',
      'tuning.gpuLayers',
    );
    assertError(
      await placement({ model: 'tiny.gguf', tuning: { gpuLayers: 1.5 } }),
      400,
      'INVALID_REQUEST',
      'tuning.gpuLayers',
    );
    assertError(
      await placement({ model: 'tiny.gguf', tuning: { flashAttention: true } }),
      400,
      'INVALID_JSON',
      'tuning.flashAttention',
    );
    assertError(await placement({ model: 'tiny.gguf', extra: 1 }), 400, 'INVALID_JSON', 'extra');
    assertError(await placement({ model: '' }), 400, 'INVALID_REQUEST', 'model');
    assertError(await placement({ model: 'x'.repeat(1025) }), 400, 'INVALID_REQUEST', 'model');
    assertError(await placement({}), 400, 'INVALID_REQUEST', 'model');
    assertError(await svc.request('POST', '/v1/runtime/placement'), 400, 'INVALID_JSON', null);
    assertError(
      await svc.request('POST', '/v1/runtime/placement?x=1', { body: { model: 'tiny.gguf' } }),
      400,
      'INVALID_REQUEST',
      'x',
    );
    // A catalog model of another kind is not the local runtime's.
    const provider = await svc.request('POST', '/v1/providers', {
      body: { id: 'remote', kind: 'openai_compatible', baseUrl: 'http://127.0.0.1:9/v1' },
    });
    assert.equal(provider.status, 201, provider.text);
    const made = await svc.request('POST', '/v1/catalog/models', {
      body: { providerId: 'remote', upstreamModelId: 'big', families: ['styleA.chat_completions'] },
    });
    assert.equal(made.status, 201, made.text);
    assertError(await placement({ model: 'remote/big' }), 400, 'INVALID_REQUEST', 'model');
  });
});

describe('the benchmark action', () => {
  const tuning = { contextSize: 128, parallel: 1 };

  test('measures the tiny model, keeps the result and lists it, loading nothing that stays', async () => {
    const reply = await benchmark({ promptTokens: 32, generateTokens: 8, tuning });
    assert.equal(reply.status, 200, reply.text);
    const r = reply.json;
    assert.match(r.jobId, /^job_/);
    assert.equal(r.modelId, 'embedded/tiny.gguf');
    assert.deepEqual(r.tuning, { contextSize: 128, threads: 0, gpuLayers: 0, parallel: 1, batchSize: 0 });
    assert.deepEqual([r.promptTokens, r.generatedTokens], [32, 8]);
    assert.ok(r.promptTokensPerSecond > 0 && r.generationTokensPerSecond > 0, reply.text);
    assert.ok(Number.isInteger(r.loadMs) && r.loadMs >= 0);
    assert.ok(Date.parse(r.at) > 0);

    const job = await svc.request('GET', `/v1/jobs/${r.jobId}`);
    assert.deepEqual(
      [job.json.kind, job.json.subject, job.json.state, job.json.progress],
      ['benchmark', 'embedded/tiny.gguf', 'succeeded', 1],
    );
    assert.deepEqual(job.json.result, r);

    const listed = await svc.request('GET', '/v1/runtime/benchmarks?model=embedded%2Ftiny.gguf');
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.json.data[0], r);
    assert.deepEqual((await svc.request('GET', '/v1/runtime/benchmarks?model=embedded%2Fother.gguf')).json, {
      data: [],
      limit: 50,
      offset: 0,
      hasMore: false,
    });
    // The benchmark's copy of the model is its own: nothing joins the loaded list.
    assert.deepEqual((await svc.request('GET', '/v1/runtime/loaded')).json.data, []);
    const audit = await svc.request('GET', '/v1/audit-events?action=model.benchmark');
    assert.equal(audit.json.data[0]?.resourceId, 'embedded/tiny.gguf', audit.text);
  });

  test('runs as a job with progress; a cancelled one stops and keeps nothing', async () => {
    const started = await benchmark(
      { promptTokens: 64, generateTokens: 4000, tuning: { contextSize: 4096, parallel: 1 } },
      false,
    );
    assert.equal(started.status, 202, started.text);
    assert.deepEqual([started.json.kind, started.json.state], ['benchmark', 'queued']);
    const id: string = started.json.id;
    const stream = await openLiveStream({
      port: svc.port,
      path: `/v1/jobs/${id}/events`,
      headers: { authorization: `Bearer ${svc.adminToken}` },
    });
    // Once the prompt is evaluated (progress 0.6 and on) the run is in the worker's generation loop.
    let moving: WireEvent | null = null;
    for (let e = await stream.next(); e !== null; e = await stream.next()) {
      if (e.event === 'job.progress' && e.data.progress >= 0.6) {
        moving = e;
        break;
      }
      assert.notEqual(e.event, 'job.succeeded', 'the run ended before it could be cancelled');
    }
    assert.ok(moving, 'no progress past the prompt');
    const cancelled = await svc.request('POST', `/v1/jobs/${id}/cancel`);
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.json.state, 'cancelled');
    stream.close();
    // The next run waits for the cancelled one to stop, then succeeds; the cancelled one left no record.
    const next = await benchmark({ promptTokens: 8, generateTokens: 4, tuning });
    assert.equal(next.status, 200, next.text);
    const listed = (await svc.request('GET', '/v1/runtime/benchmarks?limit=200')).json.data as { jobId: string }[];
    assert.equal(listed[0]!.jobId, next.json.jobId);
    assert.equal(
      listed.some((b) => b.jobId === id),
      false,
    );
    assert.equal((await svc.request('GET', `/v1/jobs/${id}`)).json.state, 'cancelled');
  });

  test('bad bodies and queries are 400 naming the field, before any job', async () => {
    const jobsBefore = (await svc.request('GET', '/v1/jobs?kind=benchmark&limit=200')).json.data.length;
    assertError(await benchmark({ promptTokens: 0 }), 400, 'INVALID_REQUEST', 'promptTokens');
    assertError(await benchmark({ generateTokens: 4097 }), 400, 'INVALID_REQUEST', 'generateTokens');
    assertError(await benchmark({ tuning: { gpuLayers: 'auto' } }), 400, 'INVALID_REQUEST', 'tuning.gpuLayers');
    assertError(await benchmark({ tuning: { contextSize: 1.5 } }), 400, 'INVALID_REQUEST', 'tuning.contextSize');
    assertError(await benchmark({ rounds: 3 }), 400, 'INVALID_JSON', 'rounds');
    assertError(await benchmark([]), 400, 'INVALID_REQUEST', null);
    assertError(await benchmark('{"promptTokens":'), 400, 'INVALID_JSON', null);
    const tooLong = await benchmark({ promptTokens: 200, generateTokens: 8, tuning });
    assertError(tooLong, 400, 'INVALID_REQUEST', 'promptTokens');
    assert.equal(tooLong.json.error.details.contextSize, 128);
    assertError(
      await svc.request('POST', '/v1/catalog/models/embedded%2Fcorrupt.gguf/actions/benchmark', { body: {} }),
      404,
      'NOT_FOUND',
      'id',
    );
    assertError(
      await svc.request('POST', '/v1/catalog/models/remote%2Fbig/actions/benchmark', { body: {} }),
      400,
      'INVALID_REQUEST',
      'action',
    );
    assert.equal((await svc.request('GET', '/v1/jobs?kind=benchmark&limit=200')).json.data.length, jobsBefore);

    assertError(await svc.request('GET', '/v1/runtime/benchmarks?limit=0'), 400, 'INVALID_REQUEST', 'limit');
    assertError(await svc.request('GET', '/v1/runtime/benchmarks?offset=-1'), 400, 'INVALID_REQUEST', 'offset');
    assertError(
      await svc.request('GET', `/v1/runtime/benchmarks?model=${'x'.repeat(1025)}`),
      400,
      'INVALID_REQUEST',
      'model',
    );
    assertError(await svc.request('GET', '/v1/runtime/benchmarks?sort=asc'), 400, 'INVALID_REQUEST', 'sort');
  });

  test('load and unload still take no body', async () => {
    const loaded = await svc.request('POST', `/v1/catalog/models/${TINY}/actions/load?wait=true`, { body: 'not json' });
    assert.equal(loaded.status, 200, loaded.text);
    const unloaded = await svc.request('POST', `/v1/catalog/models/${TINY}/actions/unload?wait=true`);
    assert.equal(unloaded.json.wasLoaded, true, unloaded.text);
  });
});
