import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import { tempHome } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Metering end to end: known usage from the fakes, relayed for two local tokens, streamed and not, with a
// failed and an aborted call, must add up exactly in every usage route, survive a restart, and leave no
// prompt, tool argument or header in the data directory.

const OPENAI_KEY = `fake-openai-${process.pid}`;
const ANTHROPIC_KEY = `fake-anthropic-${process.pid}`;
const SENTINEL = `sentinel-${process.pid}-zq`;
const today = () => {
  const d = new Date();
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
};

let svc: InProcessService;
let home: string;
let oa: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;
const tokens: Record<'a' | 'b', { id: string; secret: string }> = {} as never;

const chat = (stream: boolean) => ({
  model: 'openai/gpt-test',
  messages: [{ role: 'user', content: `tell me ${SENTINEL}` }],
  tools: [
    {
      type: 'function',
      function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
    },
  ],
  ...(stream && { stream: true }),
});
const message = (stream: boolean) => ({
  model: 'anthropic/claude-test',
  max_tokens: 64,
  messages: [{ role: 'user', content: `hello ${SENTINEL}` }],
  ...(stream && { stream: true }),
});

async function call(token: 'a' | 'b', path: string, body: unknown) {
  const reply = await svc.request('POST', path, {
    body,
    token: tokens[token].secret,
    headers: { 'x-sentinel': SENTINEL, 'anthropic-version': '2023-06-01' },
  });
  return reply;
}

/** Starts a slow stream and drops it after the first bytes: an aborted call. */
function abortedStream(token: 'a' | 'b'): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: svc.port,
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { authorization: `Bearer ${tokens[token].secret}`, 'content-type': 'application/json' },
      },
      (res) => res.once('data', () => (req.destroy(), resolve())),
    );
    req.on('error', () => undefined);
    req.on('close', () => resolve());
    req.end(JSON.stringify(chat(true)));
    setTimeout(() => reject(new Error('no stream')), 10_000).unref();
  });
}

async function usage(path: string, query = '') {
  const reply = await svc.request('GET', `/v1/usage/${path}${query}`);
  assert.equal(reply.status, 200, reply.text);
  return reply.json;
}

before(async () => {
  oa = await openaiFake.start({ apiKey: OPENAI_KEY });
  oa.setModels([{ id: 'gpt-test' }]);
  oa.setOutput({ toolCalls: [{ name: 'lookup', arguments: { q: SENTINEL } }] });
  an = await anthropicFake.start({ apiKey: ANTHROPIC_KEY });
  an.setModels([{ id: 'claude-test' }]);
  home = tempHome();
  svc = await startInProcess({ home });
  for (const [kind, fake, key] of [
    ['openai', oa, OPENAI_KEY],
    ['anthropic', an, ANTHROPIC_KEY],
  ] as const) {
    assert.equal(
      (await svc.request('POST', '/v1/providers', { body: { kind, baseUrl: fake.baseUrl, credential: key } })).status,
      201,
    );
    assert.equal((await svc.request('POST', `/v1/providers/${kind}/actions/refresh-models`)).status, 200);
  }
  for (const name of ['a', 'b'] as const) {
    const created = await svc.request('POST', '/v1/tokens', { body: { name } });
    svc.markSecretBearing(created);
    tokens[name] = { id: created.json.token.id, secret: created.json.secret };
  }
  // Token a: four good calls, two protocols, streamed and not.
  for (const stream of [false, true]) {
    assert.equal((await call('a', '/v1/chat/completions', chat(stream))).status, 200);
    assert.equal((await call('a', '/v1/messages', message(stream))).status, 200);
  }
  // Token b: one good call, one the upstream fails, one the client abandons.
  assert.equal((await call('b', '/v1/chat/completions', chat(false))).status, 200);
  oa.failNext(500, { error: { message: 'boom', type: 'server_error' } });
  assert.equal((await call('b', '/v1/chat/completions', chat(false))).status, 502);
  oa.slowStreamNext({ chunkDelayMs: 500 });
  await abortedStream('b');
  // The meter commits within a second of a call ending.
  const deadline = Date.now() + 10_000;
  while ((await usage('summary')).totals.requests < 7 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
});
after(async () => {
  await svc.stop();
  await oa.close();
  await an.close();
});

// Per good call: OpenAI chat 31 in (8 cached) / 17 out (5 reasoning) / 48 total; Anthropic messages
// 31 + 3 cache-creation + 8 cache-read = 42 in (8 cached) / 17 out / 59 total. The abandoned stream left before
// its usage chunk: metered at the estimate, its body's bytes over 3 and no text streamed (its first chunk holds
// only the role).
const abandoned = Math.ceil(Buffer.byteLength(JSON.stringify(chat(true))) / 3);
const expectedTotals = {
  requests: 7,
  failedRequests: 2,
  inputTokens: 3 * 31 + 2 * 42 + abandoned,
  outputTokens: 5 * 17,
  cachedInputTokens: 5 * 8,
  reasoningTokens: 3 * 5,
  totalTokens: 3 * 48 + 2 * 59 + abandoned,
  estimatedUsageRequests: 1,
};

const pick = (row: Record<string, unknown>) => Object.fromEntries(Object.keys(expectedTotals).map((k) => [k, row[k]]));

describe('usage routes over relayed traffic', () => {
  test('summary and daily add up exactly; failed and aborted calls count as failed', async () => {
    const summary = await usage('summary');
    assert.deepEqual(pick(summary.totals), expectedTotals);
    const daily = await usage('daily');
    assert.equal(daily.data.length, 1);
    assert.equal(daily.data[0].day, today());
    assert.deepEqual(pick(daily.data[0]), expectedTotals);
  });

  test('breakdown per token and per provider and model', async () => {
    const byToken = await usage('breakdown', '?groupBy=token');
    const a = byToken.data.find((r: { tokenId: string }) => r.tokenId === tokens.a.id);
    const b = byToken.data.find((r: { tokenId: string }) => r.tokenId === tokens.b.id);
    assert.deepEqual([a.requests, a.failedRequests, a.totalTokens], [4, 0, 2 * 48 + 2 * 59]);
    assert.deepEqual([b.requests, b.failedRequests, b.totalTokens], [3, 2, 48 + abandoned]);
    const byModel = await usage('breakdown', '?groupBy=provider_model');
    const rows = Object.fromEntries(
      byModel.data.map((r: { modelId: string; requests: number }) => [r.modelId, r.requests]),
    );
    assert.deepEqual(rows, { 'openai/gpt-test': 5, 'anthropic/claude-test': 2 });
    assert.equal(byModel.data[0].modelId, 'openai/gpt-test', 'ranked by total tokens (144 against 118)');
  });

  test('tokenId, providerId, modelId, from, to, limit filter or fail', async () => {
    assert.equal((await usage('summary', `?tokenId=${tokens.a.id}`)).totals.requests, 4);
    assert.equal((await usage('summary', '?providerId=anthropic')).totals.totalTokens, 2 * 59);
    assert.equal((await usage('summary', `?modelId=${encodeURIComponent('openai/gpt-test')}`)).totals.requests, 5);
    assert.equal((await usage('summary', `?from=${today()}&to=${today()}`)).totals.requests, 7);
    assert.equal((await usage('summary', '?to=2020-01-01')).totals.requests, 0);
    assert.equal((await usage('breakdown', '?groupBy=token&limit=1')).data.length, 1);
    for (const [route, query, param] of [
      ['summary', '?from=2026-02-30', 'from'],
      ['summary', '?tokenId=', 'tokenId'],
      ['breakdown', '?groupBy=day', 'groupBy'],
      ['breakdown', '?limit=0', 'limit'],
      ['tools', '?limit=501', 'limit'],
      ['daily', '?groupBy=token', 'groupBy'],
    ] as const) {
      const reply = await svc.request('GET', `/v1/usage/${route}${query}`);
      assert.equal(reply.status, 400, `${route}${query}`);
      assert.equal(reply.json.error.param, param, `${route}${query}`);
    }
  });

  test('tool rows hold names and counts only', async () => {
    const tools = await usage('tools');
    // Both OpenAI chats of token a and the good one of token b called `lookup`.
    assert.deepEqual(tools.data.find((r: { name: string }) => r.name === 'lookup')?.calls, 3);
  });

  test('a restart keeps the aggregates; nothing sent in prompts, tool arguments or headers is stored', async () => {
    await svc.stop();
    svc = await startInProcess({ home });
    assert.deepEqual(pick((await usage('summary')).totals), expectedTotals);
    await svc.stop();
    const files = readdirSync(home, { recursive: true, encoding: 'utf8' }).filter((f) =>
      statSync(join(home, f)).isFile(),
    );
    assert.ok(files.length > 0);
    for (const f of files) assert.ok(!readFileSync(join(home, f)).includes(SENTINEL), `${f} holds the sentinel`);
    svc = await startInProcess({ home });
  });

  test('a model the price database knows gets an estimated cost, and its catalog view names the source', async () => {
    // After the exact totals above: these calls have a model of their own, filtered by modelId.
    oa.setModels([{ id: 'gpt-test' }, { id: 'gpt-4o-mini' }]);
    assert.equal((await svc.request('POST', '/v1/providers/openai/actions/refresh-models')).status, 200);
    const priced = await svc.request('GET', `/v1/catalog/models/${encodeURIComponent('openai/gpt-4o-mini')}`);
    assert.equal(priced.status, 200, priced.text);
    assert.equal(priced.json.pricing, null, 'the catalog record itself stays unpriced');
    assert.equal(priced.json.pricingSource, 'genai-prices@0.1.8');
    assert.deepEqual(
      [priced.json.effectivePricing.inputPerMTok, priced.json.effectivePricing.outputPerMTok],
      [0.15, 0.6],
    );
    const unknown = await svc.request('GET', `/v1/catalog/models/${encodeURIComponent('openai/gpt-test')}`);
    assert.deepEqual([unknown.json.pricingSource, unknown.json.effectivePricing], [null, null]);
    assert.equal(
      (await call('a', '/v1/chat/completions', { ...chat(false), model: 'openai/gpt-4o-mini' })).status,
      200,
    );
    const query = `?modelId=${encodeURIComponent('openai/gpt-4o-mini')}`;
    const deadline = Date.now() + 10_000;
    while ((await usage('summary', query)).totals.requests < 1 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const totals = (await usage('summary', query)).totals;
    // 23 plain + 8 cached prompt tokens, 17 out: 23 x 0.15 + 8 x 0.075 + 17 x 0.6 = 14.25 micro-USD.
    assert.ok(Math.abs(totals.estimatedCostUsd - 14.25e-6) < 1e-12, String(totals.estimatedCostUsd));
    assert.equal(totals.costUsd, totals.estimatedCostUsd);
    assert.equal(totals.costEstimated, true);
    // The models the database does not know stay unpriced.
    const other = (await usage('summary', `?modelId=${encodeURIComponent('openai/gpt-test')}`)).totals;
    assert.deepEqual([other.estimatedCostUsd, other.costUsd], [null, null]);
  });

  test('the usage answers name what priced each estimate: the price database or a catalog price', async () => {
    // After the test above, whose one call of openai/gpt-4o-mini the database priced: openai/gpt-test gets a
    // catalog price, and one call at it.
    const patched = await svc.request('PATCH', '/v1/catalog/models/openai%2Fgpt-test', {
      body: { pricing: { inputPerMTok: 1, outputPerMTok: 2 } },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.json.pricingSource, 'catalog');
    const before = (await usage('summary')).totals.requests;
    assert.equal((await call('b', '/v1/chat/completions', chat(false))).status, 200);
    const deadline = Date.now() + 10_000;
    while ((await usage('summary')).totals.requests <= before && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    // 31 prompt tokens (no cache price: the 8 cached at the input price) x 1 + 17 out x 2 = 65 micro-USD.
    const catalog = { source: 'catalog', calls: 1, unreportedCalls: 1, estimatedCostUsd: 65e-6 };
    const database = { source: 'genai-prices@0.1.8', calls: 1, unreportedCalls: 1, estimatedCostUsd: 14.25e-6 };
    assert.deepEqual((await usage('summary')).totals.pricingSources, [catalog, database]);
    const byModel = await usage('breakdown', '?groupBy=model');
    assert.deepEqual(
      Object.fromEntries(
        byModel.data.map((r: { modelId: string; pricingSources: unknown }) => [r.modelId, r.pricingSources]),
      ),
      { 'openai/gpt-test': [catalog], 'openai/gpt-4o-mini': [database], 'anthropic/claude-test': [] },
    );
    assert.deepEqual((await usage('daily')).data.at(-1).pricingSources, [catalog, database]);
  });
});
