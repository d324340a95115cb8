import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp } from '../../../edge/http/app.ts';
import { corsPolicy } from '../../../edge/http/cors.ts';
import { usageRoutes } from '../../../edge/routes/usage.ts';
import type { AuthResult } from '../../../control/token-service.ts';
import type { UsageEvent } from '../../../protocol/gateway.ts';
import { addDays } from '../../../protocol/local-day.ts';
import { openStoreEnv, type StoreEnv } from '../../../store/env.ts';
import { usageRepo, usageWriter } from '../../../store/usage-repo.ts';
import { createPending, foldRecord } from '../../../workers/meter/aggregate.ts';
import { removeDirs, report, tempDataDir, usageEvent } from '../../helpers/usage.ts';

// The six usage routes through the edge core, over a real store; "today" is pinned to 2026-03-10.

const READ = 'sk-svc-' + 'R'.repeat(43);
const INFERENCE = 'sk-svc-' + 'I'.repeat(43);
const TODAY = '2026-03-10';
const dirs: string[] = [];
let env: StoreEnv;
let app: ReturnType<typeof createApp>;

function authenticate(secret: string): AuthResult {
  if (secret === READ)
    return { ok: true, principal: { tokenId: 'tok_reader', scopes: ['read'], serviceAccountId: null } };
  if (secret === INFERENCE)
    return { ok: true, principal: { tokenId: 'tok_inf', scopes: ['inference'], serviceAccountId: null } };
  return { ok: false, reason: 'unknown' };
}

async function get(path: string, query = '', token = READ) {
  const res = await app.handle({
    method: 'GET',
    path,
    query,
    headers: { host: 'localhost', authorization: `Bearer ${token}` },
    body: null,
  });
  return { status: res.status, json: JSON.parse(res.body.toString()) as Record<string, unknown> };
}

async function rejects(path: string, query: string, param: string): Promise<void> {
  const res = await get(path, query);
  assert.equal(res.status, 400, `${path}?${query}`);
  const error = res.json['error'] as { code: string; param: string };
  assert.equal(error.code, 'INVALID_REQUEST');
  assert.equal(error.param, param, `${path}?${query}`);
}

const ROUTES = ['summary', 'daily', 'breakdown', 'tools', 'routes', 'acceleration'].map((r) => `/v1/usage/${r}`);

before(() => {
  env = openStoreEnv(tempDataDir(dirs));
  const rows: [string, Partial<UsageEvent>][] = [
    ['2025-03-10', { usage: report({ totalTokens: 1 }) }],
    ['2025-03-11', { usage: report({ totalTokens: 2 }) }],
    ['2026-03-01', { usage: report({ totalTokens: 10, toolCalls: { search: 2 } }) }],
    ['2026-03-05', { tokenId: 'tok_b', usage: report({ totalTokens: 20, toolCalls: { fetch: 1, search: 1 } }) }],
    [
      '2026-03-05',
      {
        providerId: 'anthropic',
        modelId: 'anthropic/claude',
        usage: report({ totalTokens: 40, toolCalls: { fetch: 5 } }),
      },
    ],
    [
      '2026-03-10',
      {
        route: { packSlug: 'coding', routeId: 'fast', fallback: true, fallbackReason: 'timeout' },
        acceleration: { mode: 'draft', draftModelId: 'openai/mini', generationMs: 10 },
      },
    ],
    ['2026-03-11', { usage: report({ totalTokens: 500 }) }],
  ];
  const p = createPending();
  for (const [day, over] of rows) foldRecord(p, usageEvent(over), day);
  usageWriter(env).commit(p);
  app = createApp({
    routes: usageRoutes(usageRepo(env), () => new Date(2026, 2, 10, 12).getTime()),
    log: pino({ level: 'silent' }),
    authenticate,
    cors: () => corsPolicy([]),
    jsonBodyLimit: () => 1024,
    multipartBodyLimit: () => 1024,
    listener: { host: '127.0.0.1', networkExposed: false },
    isDraining: () => false,
  });
});
after(async () => {
  await env.close();
  removeDirs(dirs);
});

describe('usage routes: range', () => {
  it('defaults to the 365 days ending today, both ends included', async () => {
    const res = await get('/v1/usage/summary');
    assert.equal(res.status, 200);
    assert.equal(res.json['from'], '2025-03-11');
    assert.equal(res.json['to'], TODAY);
    assert.deepEqual(res.json['totals'], {
      requests: 5,
      failedRequests: 0,
      inputTokens: 50,
      outputTokens: 25,
      cachedInputTokens: 10,
      reasoningTokens: 5,
      totalTokens: 87,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      estimatedUsageRequests: 0,
      costUsd: null,
      providerReportedCostUsd: null,
      estimatedCostUsd: null,
      costEstimated: false,
      pricingSources: [],
    });
    assert.equal(res.json['toolCalls'], 9);
    assert.equal(res.json['activeDays'], 4);
  });

  it('takes `from` and `to` as inclusive local days', async () => {
    const res = await get('/v1/usage/daily', 'from=2026-03-05&to=2026-03-11');
    assert.deepEqual(
      (res.json['data'] as { day: string; totalTokens: number }[]).map((d) => [d.day, d.totalTokens]),
      [
        ['2026-03-05', 60],
        ['2026-03-10', 15],
        ['2026-03-11', 500],
      ],
    );
    const shifted = await get('/v1/usage/daily', 'to=2025-03-11');
    assert.equal(shifted.json['from'], '2024-03-12');
    assert.deepEqual(
      (shifted.json['data'] as { day: string }[]).map((d) => d.day),
      ['2025-03-10', '2025-03-11'],
    );
  });

  it('refuses a bad or reversed range, naming the parameter', async () => {
    for (const path of ROUTES) {
      await rejects(path, 'from=2026-03-11', 'from');
      await rejects(path, 'from=2026-03-05&to=2026-03-04', 'from');
      await rejects(path, 'from=2026-02-30', 'from');
      await rejects(path, 'to=2026-3-1', 'to');
      await rejects(path, 'to=2026-03-01T00:00:00Z', 'to');
      await rejects(path, 'from=1969-12-31', 'from');
      await rejects(path, `from=${addDays(TODAY, -3650)}`, 'from');
    }
    assert.equal((await get('/v1/usage/summary', `from=${addDays(TODAY, -3649)}`)).status, 200, 'exactly 3650 days');
  });
});

describe('usage routes: filters', () => {
  it('filter every route by providerId, modelId and tokenId', async () => {
    const q = 'from=2026-03-01&to=2026-03-31';
    const total = async (extra: string) =>
      ((await get('/v1/usage/summary', `${q}&${extra}`)).json['totals'] as { totalTokens: number }).totalTokens;
    assert.equal(await total('providerId=anthropic'), 40);
    assert.equal(await total('modelId=openai%2Fgpt-4o'), 545);
    assert.equal(await total('tokenId=tok_b'), 20);
    assert.equal(await total('tokenId=tok_b&providerId=anthropic'), 0);
    const tools = await get('/v1/usage/tools', `${q}&tokenId=tok_b`);
    assert.deepEqual(tools.json['data'], [
      { name: 'fetch', calls: 1 },
      { name: 'search', calls: 1 },
    ]);
    assert.equal(((await get('/v1/usage/routes', `${q}&providerId=anthropic`)).json['data'] as unknown[]).length, 0);
    assert.equal(((await get('/v1/usage/routes', `${q}&tokenId=tok_a`)).json['data'] as unknown[]).length, 1);
    assert.equal(
      ((await get('/v1/usage/acceleration', `${q}&modelId=anthropic%2Fclaude`)).json['data'] as unknown[]).length,
      0,
    );
    assert.equal(((await get('/v1/usage/acceleration', q)).json['data'] as unknown[]).length, 1);
  });

  it('refuse empty or over-long filter values, unknown and repeated parameters', async () => {
    for (const path of ROUTES) {
      await rejects(path, 'providerId=', 'providerId');
      await rejects(path, `tokenId=${'x'.repeat(257)}`, 'tokenId');
      await rejects(path, `modelId=${'m'.repeat(1025)}`, 'modelId');
      await rejects(path, 'tokenId=a&tokenId=b', 'tokenId');
      await rejects(path, 'since=2026-01-01', 'since');
    }
    await rejects('/v1/usage/summary', 'limit=5', 'limit');
    await rejects('/v1/usage/daily', 'groupBy=model', 'groupBy');
    await rejects('/v1/usage/tools', 'groupBy=model', 'groupBy');
  });
});

describe('usage routes: groupBy and limit', () => {
  it('groups the breakdown by each spelling, defaulting to model', async () => {
    const rows = async (groupBy: string) =>
      (await get('/v1/usage/breakdown', groupBy === '' ? 'from=2026-03-01' : `from=2026-03-01&groupBy=${groupBy}`))
        .json;
    const byModel = await rows('');
    assert.equal(byModel['groupBy'], 'model');
    assert.deepEqual(
      (byModel['data'] as { modelId: string }[]).map((r) => r.modelId),
      ['openai/gpt-4o', 'anthropic/claude'],
    );
    assert.deepEqual(
      ((await rows('provider'))['data'] as { providerId: string; totalTokens: number }[]).map((r) => [
        r.providerId,
        r.totalTokens,
      ]),
      [
        ['openai', 45],
        ['anthropic', 40],
      ],
    );
    assert.deepEqual(
      ((await rows('token'))['data'] as { tokenId: string }[]).map((r) => r.tokenId),
      ['tok_a', 'tok_b'],
    );
    const pm = ((await rows('provider_model'))['data'] as Record<string, unknown>[])[0]!;
    assert.deepEqual(
      [pm['providerId'], pm['modelId'], pm['tokenId'], pm['totalTokens']],
      ['openai', 'openai/gpt-4o', undefined, 45],
    );
    await rejects('/v1/usage/breakdown', 'groupBy=day', 'groupBy');
    await rejects('/v1/usage/breakdown', 'groupBy=', 'groupBy');
  });

  it('applies limit within 1..500 and reports hasMore; refuses anything else', async () => {
    const page = (await get('/v1/usage/breakdown', 'from=2026-03-01&groupBy=token&limit=1')).json;
    assert.equal((page['data'] as unknown[]).length, 1);
    assert.equal(page['hasMore'], true);
    const tools = (await get('/v1/usage/tools', 'from=2026-03-01&limit=1')).json;
    assert.deepEqual(tools['data'], [{ name: 'fetch', calls: 6 }]);
    assert.equal(tools['hasMore'], true);
    assert.equal((await get('/v1/usage/tools', 'from=2026-03-01&limit=500')).json['hasMore'], false);
    for (const path of ['/v1/usage/breakdown', '/v1/usage/tools', '/v1/usage/routes', '/v1/usage/acceleration']) {
      for (const bad of ['0', '501', '-1', '1.5', 'ten', '']) await rejects(path, `limit=${bad}`, 'limit');
      assert.equal((await get(path, 'limit=500')).status, 200);
    }
  });
});

describe('usage routes: answers and access', () => {
  it('answer route and acceleration rows with their documented fields', async () => {
    const routes = (await get('/v1/usage/routes', `from=${TODAY}`)).json;
    assert.deepEqual(routes['data'], [
      {
        packSlug: 'coding',
        routeId: 'fast',
        providerId: 'openai',
        modelId: 'openai/gpt-4o',
        fallback: true,
        fallbackReason: 'timeout',
        requests: 1,
        failedRequests: 0,
        inputTokens: 10,
        outputTokens: 5,
        cachedInputTokens: 2,
        reasoningTokens: 1,
        totalTokens: 15,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        estimatedUsageRequests: 0,
        costUsd: null,
        providerReportedCostUsd: null,
        estimatedCostUsd: null,
        costEstimated: false,
        pricingSources: [],
      },
    ]);
    const acc = ((await get('/v1/usage/acceleration', `from=${TODAY}`)).json['data'] as Record<string, unknown>[])[0]!;
    assert.equal(acc['mode'], 'draft');
    assert.equal(acc['accelerated'], true);
    assert.equal(acc['generationMs'], 10);
    assert.equal(acc['speedup'], null);
    assert.equal(acc['draftAcceptance'], null);
  });

  it('need the read scope', async () => {
    for (const path of ROUTES) {
      const res = await get(path, '', INFERENCE);
      assert.equal(res.status, 403, path);
      assert.equal((res.json['error'] as { code: string }).code, 'FORBIDDEN');
    }
  });
});
