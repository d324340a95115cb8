import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import type { Reply } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Budgets end to end on one service with Gauge left off (budgets are setup; their spend comes from the meter):
// real calls through two providers, one that reports what each call cost (OpenRouter's `usage.cost`) and one
// that does not but reports prompt-cache reads and writes (styleB), both priced in the catalog. Every figure
// below is computed by hand from the fakes' usage and the prices.

const OR_KEY = `fake-openrouter-${process.pid}`;
const AN_KEY = `fake-anthropic-${process.pid}`;

let svc: InProcessService;
let or: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;
const replies: Reply[] = [];

async function req(method: string, path: string, body?: unknown, token?: string): Promise<Reply> {
  const reply = await svc.request(method, path, {
    ...(body !== undefined && { body }),
    ...(token !== undefined && { token }),
    headers: { 'anthropic-version': '2023-06-01' },
  });
  replies.push(reply);
  return reply;
}
async function ok(method: string, path: string, body: unknown, status: number) {
  const reply = await req(method, path, body);
  assert.equal(reply.status, status, `${method} ${path}: ${reply.text}`);
  return reply.json;
}
async function refused(method: string, path: string, body: unknown, status: number, param?: string) {
  const reply = await req(method, path, body);
  assert.equal(reply.status, status, `${method} ${path} ${JSON.stringify(body)}: ${reply.text}`);
  if (param !== undefined) assert.equal(reply.json.error.param, param, `${method} ${path} ${JSON.stringify(body)}`);
}

// OpenRouter chat: 1000 prompt tokens of which 400 cached, 200 out, reported cost 0.002.
//   estimate at 2 / 0.5 / 10 per MTok: 600 x 2 + 400 x 0.5 + 200 x 10 = 3400 micro-dollars.
// styleB messages: input_tokens 600 + cache_creation 100 + cache_read 300 = 1000 in, 50 out, no cost reported.
//   estimate at 3 / 0.3 (read) / 3.75 (write) / 15: 1800 + 90 + 375 + 750 = 3015 micro-dollars.
// Two calls each: reported 0.004; estimated 0.0068 + 0.00603 = 0.01283.
const REPORTED = 0.004;
const ESTIMATED = 0.01283;
const close = (a: number | null, b: number) => assert.ok(a !== null && Math.abs(a - b) < 1e-9, `${a} != ${b}`);

before(async () => {
  or = await openaiFake.start({ flavour: 'openrouter', apiKey: OR_KEY });
  or.setUsage({ inputTokens: 1000, cachedTokens: 400, outputTokens: 200, reasoningTokens: 0, costUsd: 0.002 });
  or.setOutput({ toolCalls: 'none' });
  an = await anthropicFake.start({ apiKey: AN_KEY });
  an.setUsage({ inputTokens: 600, cacheCreationTokens: 100, cachedTokens: 300, outputTokens: 50 });
  svc = await startInProcess();
  for (const [kind, fake, key] of [
    ['openrouter', or, OR_KEY],
    ['anthropic', an, AN_KEY],
  ] as const) {
    await ok('POST', '/v1/providers', { kind, baseUrl: fake.baseUrl, credential: key }, 201);
  }
  // Explicit records: no model list needs fetching first.
  const model = (providerId: string, upstreamModelId: string, family: string, pricing: object) => ({
    providerId,
    upstreamModelId,
    families: [family],
    pricing,
  });
  await ok(
    'POST',
    '/v1/catalog/models',
    model('openrouter', 'or-model', 'styleA.chat_completions', {
      inputPerMTok: 2,
      cachedInputPerMTok: 0.5,
      outputPerMTok: 10,
    }),
    201,
  );
  await ok(
    'POST',
    '/v1/catalog/models',
    model('anthropic', 'claude-test', 'styleB.messages', {
      inputPerMTok: 3,
      cachedInputPerMTok: 0.3,
      cacheWritePerMTok: 3.75,
      outputPerMTok: 15,
    }),
    201,
  );
  const chat = { model: 'openrouter/or-model', messages: [{ role: 'user', content: 'hi' }] };
  const message = { model: 'anthropic/claude-test', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] };
  for (const stream of [false, true]) {
    await ok(
      'POST',
      '/v1/chat/completions',
      { ...chat, ...(stream && { stream: true, stream_options: { include_usage: true } }) },
      200,
    );
    await ok('POST', '/v1/messages', { ...message, ...(stream && { stream: true }) }, 200);
  }
  // The meter commits within a second of a call ending.
  const deadline = Date.now() + 10_000;
  while ((await ok('GET', '/v1/usage/summary', undefined, 200)).totals.requests < 4 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
});
after(async () => {
  await svc.stop();
  await or.close();
  await an.close();
});

const budgetBody = (over: Record<string, unknown> = {}) => ({
  name: 'team',
  amount: 0.005,
  period: 'day',
  basis: 'provider_reported',
  ...over,
});

describe('estimated cost in the usage views', () => {
  test('costUsd is the bill where there is one and the estimate elsewhere, and says so', async () => {
    const t = (await ok('GET', '/v1/usage/summary', undefined, 200)).totals;
    assert.equal(t.cacheWriteTokens, 200);
    close(t.providerReportedCostUsd, REPORTED);
    close(t.estimatedCostUsd, ESTIMATED);
    close(t.costUsd, REPORTED + 2 * 0.003015);
    assert.equal(t.costEstimated, true);
    const rows = (await ok('GET', '/v1/usage/breakdown?groupBy=provider', undefined, 200)).data;
    const openrouter = rows.find((r: { providerId: string }) => r.providerId === 'openrouter');
    assert.deepEqual([openrouter.costEstimated, openrouter.costUsd], [false, REPORTED]);
  });
});

describe('budget spend from real calls', () => {
  test('both bases across two providers; each basis counts only its own figure', async () => {
    const reported = await ok('POST', '/v1/gauge/budgets', budgetBody(), 201);
    close(reported.spend.providerReported, REPORTED);
    close(reported.spend.estimated, ESTIMATED);
    close(reported.spend.counted, REPORTED);
    assert.deepEqual(
      [reported.state, reported.crossed, reported.thresholds, reported.currency],
      ['warning', [50, 80], [50, 80, 100], 'USD'],
    );
    close(reported.remaining, 0.001);

    const estimated = await ok(
      'POST',
      '/v1/gauge/budgets',
      budgetBody({ basis: 'estimated', amount: 0.01, period: 'month', thresholds: [100, 25] }),
      201,
    );
    close(estimated.spend.counted, ESTIMATED);
    assert.deepEqual([estimated.state, estimated.crossed], ['exceeded', [25, 100]]);

    // Anthropic alone reported no cost: its provider-reported spend is null and counts as 0.
    const anthropicOnly = await ok(
      'POST',
      '/v1/gauge/budgets',
      budgetBody({ period: 'week', scope: { providerIds: ['anthropic'] } }),
      201,
    );
    assert.deepEqual(
      [anthropicOnly.spend.providerReported, anthropicOnly.spend.counted, anthropicOnly.state],
      [null, 0, 'ok'],
    );
    close(anthropicOnly.spend.estimated, 2 * 0.003015);
    assert.ok(Date.parse(anthropicOnly.periodStart) <= Date.now() && Date.now() < Date.parse(anthropicOnly.periodEnd));
    assert.equal(new Date(anthropicOnly.periodStart).getDay(), 1, 'weeks start on Monday, local time');

    const list = (await ok('GET', '/v1/gauge/budgets', undefined, 200)).data;
    assert.deepEqual(
      list.map((b: { id: string }) => b.id),
      [reported.id, estimated.id, anthropicOnly.id],
      'creation order',
    );
  });

  test('a later price change does not rewrite the estimates of calls already metered', async () => {
    await ok(
      'PATCH',
      '/v1/catalog/models/anthropic%2Fclaude-test',
      { pricing: { inputPerMTok: 300, outputPerMTok: 1500 } },
      200,
    );
    const list = (await ok('GET', '/v1/gauge/budgets', undefined, 200)).data;
    for (const b of list) close(b.spend.estimated, b.scope.providerIds.length === 0 ? ESTIMATED : 2 * 0.003015);
  });

  test('PATCH answers the new status; DELETE removes; both write audit records without the name', async () => {
    const created = await ok(
      'POST',
      '/v1/gauge/budgets',
      budgetBody({ name: 'ada@example.com launch', project: 'rocket' }),
      201,
    );
    assert.equal(created.name, '@example.com launch', 'labels are redacted');
    const patched = await ok(
      'PATCH',
      `/v1/gauge/budgets/${created.id}`,
      { amount: 0.004, basis: 'estimated', project: null },
      200,
    );
    assert.deepEqual(
      [patched.amount, patched.basis, patched.project, patched.state],
      [0.004, 'estimated', null, 'exceeded'],
    );
    assert.deepEqual(await ok('DELETE', `/v1/gauge/budgets/${created.id}`, undefined, 200), {
      id: created.id,
      deleted: true,
    });
    await refused('PATCH', `/v1/gauge/budgets/${created.id}`, { amount: 1 }, 404);
    const audit = (
      await ok('GET', `/v1/audit-events?resourceType=gauge-budget&resourceId=${created.id}`, undefined, 200)
    ).data;
    assert.deepEqual(audit.map((e: { action: string }) => e.action).sort(), [
      'gauge-budget.create',
      'gauge-budget.delete',
      'gauge-budget.update',
    ]);
    assert.ok(!JSON.stringify(audit).includes('launch') && !JSON.stringify(audit).includes('rocket'));
  });
});

describe('bad input', () => {
  test('bodies: missing, out of range, unknown fields, unknown scope IDs', async () => {
    const cases: [unknown, string | undefined][] = [
      [{ name: 'x', period: 'day', basis: 'estimated' }, 'amount'],
      [budgetBody({ amount: 0 }), 'amount'],
      [budgetBody({ amount: -1 }), 'amount'],
      [budgetBody({ amount: 2e9 }), 'amount'],
      [budgetBody({ amount: '5' }), 'amount'],
      [budgetBody({ currency: 'EUR' }), 'currency'],
      [budgetBody({ period: 'year' }), 'period'],
      [budgetBody({ basis: 'counted' }), 'basis'],
      [budgetBody({ thresholds: [0] }), 'thresholds[0]'],
      [budgetBody({ thresholds: [1001] }), 'thresholds[0]'],
      [budgetBody({ thresholds: [50.5] }), 'thresholds[0]'],
      [budgetBody({ thresholds: [50, 50] }), 'thresholds'],
      [budgetBody({ thresholds: [] }), 'thresholds'],
      [budgetBody({ name: '' }), 'name'],
      [budgetBody({ name: 'n'.repeat(201) }), 'name'],
      [budgetBody({ scope: { providerIds: ['nope'] } }), 'scope.providerIds[0]'],
      [budgetBody({ scope: { accountIds: ['acct_unknown'] } }), 'scope.accountIds[0]'],
      [budgetBody({ scope: { accountIds: ['service'] } }), 'scope.accountIds[0]'],
      [budgetBody({ scope: { providerIds: ['x'.repeat(64)] } }), 'scope.providerIds[0]'],
      [budgetBody({ scope: { teams: [] } }), undefined],
      [budgetBody({ spend: 1 }), undefined],
      ['not json', undefined],
      [[], undefined],
    ];
    for (const [body, param] of cases) await refused('POST', '/v1/gauge/budgets', body, 400, param);
    const id = (await ok('GET', '/v1/gauge/budgets', undefined, 200)).data[0].id;
    await refused('PATCH', `/v1/gauge/budgets/${id}`, { thresholds: [2000] }, 400, 'thresholds[0]');
    await refused('PATCH', `/v1/gauge/budgets/${id}`, { id: 'bud_other' }, 400);
    await refused('PATCH', `/v1/gauge/budgets/${id}`, { amount: null }, 400, 'amount');
  });

  test('paths and queries: unknown IDs are 404, over-long IDs and unknown parameters 400', async () => {
    await refused('PATCH', '/v1/gauge/budgets/bud_nope', { amount: 1 }, 404, 'id');
    await refused('DELETE', '/v1/gauge/budgets/bud_nope', undefined, 404, 'id');
    await refused('PATCH', `/v1/gauge/budgets/${'b'.repeat(161)}`, { amount: 1 }, 400, 'id');
    await refused('DELETE', `/v1/gauge/budgets/${'b'.repeat(161)}`, undefined, 400, 'id');
    await refused('GET', '/v1/gauge/budgets?period=day', undefined, 400);
  });

  test('a read token reads budgets and cannot change them', async () => {
    const created = await svc.request('POST', '/v1/tokens', { body: { name: 'reader', scopes: ['read'] } });
    svc.markSecretBearing(created);
    const token = created.json.secret;
    assert.equal((await req('GET', '/v1/gauge/budgets', undefined, token)).status, 200);
    assert.equal((await req('POST', '/v1/gauge/budgets', budgetBody(), token)).status, 403);
    assert.equal((await req('DELETE', '/v1/gauge/budgets/bud_x', undefined, token)).status, 403);
  });

  test('nothing answered 5xx', () => {
    assert.ok(replies.length > 40);
    assert.deepEqual(
      replies.filter((r) => r.status >= 500).map((r) => r.text),
      [],
    );
  });
});
