import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { startOpenRouterGaugeFake, type FakeKeyData, type OpenRouterGaugeFake } from '../fakes/gauge/openrouter.ts';
import * as openaiFake from '../fakes/openai.ts';
import { UNDER_WAY_MS } from '../../protocol/limit-windows.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// A Gauge window gate end to end: a real Gauge account (OpenRouter's key limit, read from its fake), refreshed,
// its reading compared with the gate's share on every call. The default gate stops new sessions only.

const KEY = `fake-openai-key-${process.pid}`;
const GAUGE_KEY = `sk-or-v1-gauge-${process.pid}`;
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let gauge: OpenRouterGaugeFake;
let accountId: string;
const ENV = { SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback' };

const key = (usedOfTen: number): FakeKeyData => ({
  limit: 10,
  limit_remaining: 10 - usedOfTen,
  limit_reset: 'monthly',
  usage: usedOfTen,
  usage_daily: 0,
  usage_weekly: 0,
  usage_monthly: usedOfTen,
});
async function ok(method: string, path: string, body?: unknown, status = 200) {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.equal(reply.status, status, `${method} ${path}: ${reply.text}`);
  return reply.json;
}
async function reading(usedOfTen: number): Promise<void> {
  gauge.setKey(key(usedOfTen));
  const outcomes = (await ok('POST', '/v1/gauge/refresh', { sourceIds: [accountId] })).data;
  assert.ok(outcomes[0].ok, JSON.stringify(outcomes));
}
const chat = (session: string | null) =>
  svc.request('POST', '/v1/chat/completions', {
    body: { model: 'oa/gpt-gate', messages: [{ role: 'user', content: 'hi' }] },
    headers: session === null ? {} : { 'x-claude-code-session-id': session },
  });

before(async () => {
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels([{ id: 'gpt-gate' }]);
  gauge = await startOpenRouterGaugeFake({ apiKey: GAUGE_KEY, managementKey: `${GAUGE_KEY}-mgmt` });
  svc = await startInProcess({ env: ENV });
  await ok('POST', '/v1/providers', { id: 'oa', kind: 'openai', baseUrl: oa.baseUrl, credential: KEY }, 201);
  await ok('POST', '/v1/providers/oa/actions/refresh-models');
  await ok('PATCH', '/v1/settings', { gauge: { enabled: true } });
  const account = { providerId: 'openrouter', authMode: 'api_key', credential: GAUGE_KEY };
  accountId = (await ok('POST', '/v1/gauge/accounts', { ...account, config: { baseUrl: gauge.baseUrl } }, 201)).id;
});
after(async () => {
  await svc?.stop();
  await Promise.all([oa?.close(), gauge?.close()]);
});

test('at the share, sessions under way go on; new ones and calls of none get 429 until the reading drops', async () => {
  await reading(5);
  const gate = { window: 'gauge', metric: 'gauge_percent', max: 80, scope: { kind: 'service' } };
  const made = await ok(
    'POST',
    '/v1/limits',
    { name: 'gate', ...gate, gauge: { accountId, windowId: 'key_limit' } },
    201,
  );
  assert.equal(made.gauge.stops, 'new_sessions', 'the default');
  assert.deepEqual(
    made.counters.map((c: { used: number }) => c.used),
    [50],
  );
  assert.equal((await chat('under-way')).status, 200, 'below the share: admitted, and the session is under way');

  await reading(9);
  assert.equal((await chat('under-way')).status, 200);
  for (const session of ['new-one', null]) {
    const refused = await chat(session);
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.json.error.code, 'LIMIT_EXCEEDED');
    assert.equal(refused.json.error.details.limitId, made.id);
    assert.match(refused.json.error.message, /80% used or more, and this call is not of a session under way/);
    assert.ok(Number(refused.headers['retry-after']) >= 1);
  }
  // The official client sees the rate-limit error it backs off on.
  const client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
  const ask = { model: 'oa/gpt-gate', messages: [{ role: 'user' as const, content: 'hi' }] };
  await assert.rejects(
    client.chat.completions.create(ask, { headers: { 'x-claude-code-session-id': 'sdk-new' } }),
    OpenAI.RateLimitError,
  );

  // A gate that stops every call refuses the session under way too.
  const all = await ok(
    'POST',
    '/v1/limits',
    { name: 'all', ...gate, gauge: { accountId, windowId: 'key_limit', stops: 'calls' } },
    201,
  );
  assert.equal((await chat('under-way')).status, 429);
  await ok('DELETE', `/v1/limits/${all.id}`);

  await reading(2);
  assert.equal((await chat('new-one')).status, 200, 'the window has room again');
  assert.equal((await chat(null)).status, 200);
});

test('a restart keeps the sessions under way; one with no call admitted for a day is forgotten', async () => {
  await reading(2);
  assert.equal((await chat('kept')).status, 200, 'admitted while open: under way');
  const { home } = svc;
  const restart = async (now?: () => number) => {
    await svc.stop();
    svc = await startInProcess({ home, env: ENV, ...(now && { now }) });
    await reading(9);
  };
  await restart();
  assert.equal((await chat('kept')).status, 200);
  assert.equal((await chat('other')).status, 429);
  await restart(() => Date.now() + UNDER_WAY_MS + 3_600_000);
  assert.equal((await chat('kept')).status, 429, 'a day later it is a new session');
});

test('bad input: `stops` is one of the two', async () => {
  const body = {
    name: 'gate',
    window: 'gauge',
    metric: 'gauge_percent',
    max: 80,
    scope: { kind: 'service' },
    gauge: { accountId, windowId: 'key_limit', stops: 'some' },
  };
  const reply = await svc.request('POST', '/v1/limits', { body });
  assert.equal(reply.status, 400, reply.text);
  assert.equal(reply.json.error.code, 'INVALID_REQUEST');
});
