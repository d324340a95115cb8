import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import * as openaiFake from '../fakes/openai.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import { tempHome, type Reply } from '../helpers/service.ts';
import { openLiveStream } from '../fakes/sse-client.ts';

/** switchyard_limit_refusals_total for one metric in a /metrics answer (0 when absent). */
function counterValue(reply: Reply, metric: string): number {
  const line = reply.text.split('\n').find((l) => l.startsWith(`switchyard_limit_refusals_total{metric="${metric}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

// Enforced limits end to end (docs/api.md, Limits), with the official clients against a loopback fake: a dollar
// limit under 64 concurrent clients, its 429 in both SDKs' shapes, the window's reset on a test clock, a token
// limit through a translation and through a route-pack fallback, a restart, and bad input on every route.

const KEY = `fake-openai-key-${process.pid}`;
// Each call: 10 input and 100 output tokens at $1,000 per million each: $0.11, never more than its reservation
// (the body's bytes over 3, plus max_tokens 100, at the same prices).
const CALL_USD = 0.11;
const home = tempHome();
let clock = Date.parse('2026-11-27T10:00:30Z');
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let agent: { id: string; secret: string };

const ask = { model: 'oa/gpt-limit', max_tokens: 100, messages: [{ role: 'user' as const, content: 'hi' }] };
const openaiFor = (secret: string) => new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: secret, maxRetries: 0 });

async function ok(method: string, path: string, body?: unknown, status = 200) {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.equal(reply.status, status, `${method} ${path}: ${reply.text}`);
  return reply.json;
}

async function start(): Promise<void> {
  svc = await startInProcess({ home, now: () => clock });
}

before(async () => {
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels([{ id: 'gpt-limit' }]);
  oa.setUsage({ inputTokens: 10, outputTokens: 100, cachedTokens: 0, reasoningTokens: 0, cacheCreationTokens: 0 });
  await start();
  await ok('POST', '/v1/providers', { id: 'oa', kind: 'openai', baseUrl: oa.baseUrl, credential: KEY }, 201);
  await ok('POST', '/v1/providers/oa/actions/refresh-models');
  await ok('PATCH', '/v1/catalog/models/oa%2Fgpt-limit', { pricing: { inputPerMTok: 1000, outputPerMTok: 1000 } });
  const created = await svc.request('POST', '/v1/tokens', { body: { name: 'agent', scopes: ['inference'] } });
  svc.markSecretBearing(created);
  agent = { id: created.json.token.id, secret: created.json.secret };
});
after(async () => {
  await svc?.stop();
  await oa?.close();
});

/** Calls until a limit refuses (the SDK's rate-limit error, anything else fails); how many were answered. */
async function answeredUntilRefused(call: () => Promise<unknown>): Promise<number> {
  for (let answered = 0; ; answered++) {
    try {
      await call();
    } catch (err) {
      assert.ok(err instanceof OpenAI.RateLimitError || err instanceof Anthropic.RateLimitError, String(err));
      return answered;
    }
  }
}
const callUntilRefused = (client: OpenAI) => answeredUntilRefused(() => client.chat.completions.create(ask));

describe('a dollar limit on a token', () => {
  let limitId: string;

  test('64 concurrent clients spend at most the limit, and every call upstream was admitted', async () => {
    const limit = await ok(
      'POST',
      '/v1/limits',
      { name: 'agent dollars', scope: { kind: 'token', id: agent.id }, window: 'minute', metric: 'usd', max: 1 },
      201,
    );
    limitId = limit.id;
    const before = oa.requests.length;
    const clients = Array.from({ length: 64 }, () => openaiFor(agent.secret));
    const answered = (await Promise.all(clients.map(callUntilRefused))).reduce((a, b) => a + b, 0);
    // Racing clients may be refused while others hold reservations; one client alone then fills what is left.
    const total = answered + (await callUntilRefused(clients[0]!));
    const view = await ok('GET', `/v1/limits/${limitId}`);
    // The list holds the same view as the limit's own route.
    assert.deepEqual(
      (await ok('GET', '/v1/limits')).data.find((l: { id: string }) => l.id === limitId),
      view,
    );
    assert.equal(view.counters.length, 1);
    const [counter] = view.counters;
    assert.equal(counter.key, agent.id);
    assert.equal(counter.reserved, 0);
    assert.ok(Math.abs(counter.used - total * CALL_USD) < 1e-9, `${counter.used} for ${total} calls`);
    assert.ok(counter.used <= 1, `spent ${counter.used}`);
    // A call reserves its body's bytes over 3 plus 100 output tokens, at $0.001 a token; calls are admitted while
    // what was spent plus that fits in $1.00. The fake holds the body as the client sent it.
    const reserved = (Math.ceil(Buffer.byteLength(oa.requests.at(-1)!.body) / 3) + 100) * 0.001;
    assert.equal(total, Math.floor((1 - reserved) / CALL_USD) + 1, `reserving ${reserved} a call`);
    assert.equal(oa.requests.length - before, total, 'no refused call reached the upstream');
  });

  test('the refusal: 429 LIMIT_EXCEEDED, rate_limit_error, Retry-After and the reset time, in both SDKs', async () => {
    const reply = await svc.request('POST', '/v1/chat/completions', { body: ask, token: agent.secret });
    assert.equal(reply.status, 429, reply.text);
    assert.equal(reply.json.error.code, 'LIMIT_EXCEEDED');
    assert.equal(reply.json.error.type, 'rate_limit_error');
    assert.equal(reply.json.error.details.limitId, limitId);
    assert.equal(reply.json.error.details.resetsAt, '2026-11-27T10:01:00.000Z');
    assert.equal(reply.headers['retry-after'], '30');
    const anthropic = new Anthropic({ baseURL: svc.url, apiKey: agent.secret, maxRetries: 0 });
    await assert.rejects(
      anthropic.messages.create({ ...ask, messages: [{ role: 'user', content: 'hi' }] }),
      (err) => err instanceof Anthropic.RateLimitError && err.status === 429,
    );
    // Another token is outside the limit's scope.
    await openaiFor(svc.adminToken).chat.completions.create(ask);
  });

  test('the next window admits again; its counter starts at zero', async () => {
    clock += 60_000;
    await openaiFor(agent.secret).chat.completions.create(ask);
    const [counter] = (await ok('GET', `/v1/limits/${limitId}`)).counters;
    assert.ok(Math.abs(counter.used - CALL_USD) < 1e-9, String(counter.used));
    assert.equal(counter.windowStart, '2026-11-27T10:01:00.000Z');
  });

  test('a restart keeps the settled counters', async () => {
    await svc.stop();
    await start();
    const [counter] = (await ok('GET', `/v1/limits/${limitId}`)).counters;
    assert.ok(Math.abs(counter.used - CALL_USD) < 1e-9, String(counter.used));
    await ok('DELETE', `/v1/limits/${limitId}`);
    await ok('GET', `/v1/limits/${limitId}`, undefined, 404);
  });
});

describe('token limits through a translation and a route-pack fallback', () => {
  test('Anthropic-style calls to an OpenAI-style model count their translated usage', async () => {
    const limit = await ok(
      'POST',
      '/v1/limits',
      { name: 'tokens', scope: { kind: 'token', id: agent.id }, window: 'hour', metric: 'total_tokens', max: 500 },
      201,
    );
    const events = await openLiveStream({
      port: svc.port,
      path: '/v1/events',
      headers: { authorization: `Bearer ${svc.adminToken}` },
    });
    const refusals = async () => counterValue(await svc.request('GET', '/metrics'), 'total_tokens');
    const refusedBefore = await refusals();
    const anthropic = new Anthropic({ baseURL: svc.url, apiKey: agent.secret, maxRetries: 0 });
    const answered = await answeredUntilRefused(() =>
      anthropic.messages.create({ ...ask, messages: [{ role: 'user', content: 'hi' }] }),
    );
    // 110 tokens a call, each reserving under 134: 330 + 134 fits in 500, 440 + 134 does not.
    assert.equal(answered, 4);
    assert.equal((await ok('GET', `/v1/limits/${limit.id}`)).counters[0].used, 440);
    assert.equal((await refusals()) - refusedBefore, 1, 'GET /metrics counts the refusal under its metric');
    const next = async (type: string) => {
      for (let e = await events.next(); e !== null; e = await events.next()) if (e.event === type) return e.data;
      assert.fail(`the event stream ended before ${type}`);
    };
    const tripped = await next('limit.tripped');
    assert.deepEqual(
      [tripped.limitId, tripped.key, tripped.metric, tripped.window],
      [limit.id, agent.id, 'total_tokens', 'hour'],
    );
    // The hour ends (the test clock): the tripped counter's reset is announced, and the limit admits again.
    clock += 3_600_000;
    assert.deepEqual(await next('limit.reset'), { limitId: limit.id, name: 'tokens', key: agent.id });
    events.close();
    await anthropic.messages.create({ ...ask, messages: [{ role: 'user', content: 'hi' }] });
    await ok('DELETE', `/v1/limits/${limit.id}`);
  });

  test('a route pack that falls back counts once, under the pack', async () => {
    await ok(
      'POST',
      '/v1/providers',
      { id: 'dead', kind: 'openai', baseUrl: 'http://127.0.0.1:1/v1', credential: KEY },
      201,
    );
    await ok(
      'POST',
      '/v1/catalog/models',
      { providerId: 'dead', upstreamModelId: 'gpt-limit', families: ['styleA.chat_completions'] },
      201,
    );
    await ok(
      'POST',
      '/v1/route-packs',
      {
        slug: 'ab',
        displayName: 'dead then oa',
        routes: [
          { id: 'a', model: 'dead/gpt-limit' },
          { id: 'b', model: 'oa/gpt-limit' },
        ],
        fallback: { model: 'oa/gpt-limit' },
      },
      201,
    );
    const limit = await ok(
      'POST',
      '/v1/limits',
      { name: 'pack', scope: { kind: 'route_pack', id: 'ab' }, window: 'day', metric: 'total_tokens', max: 500 },
      201,
    );
    const client = openaiFor(agent.secret);
    const before = oa.requests.length;
    const answered = await answeredUntilRefused(() => client.chat.completions.create({ ...ask, model: '@route/ab' }));
    assert.equal(answered, 4);
    assert.equal(oa.requests.length - before, 4);
    assert.equal((await ok('GET', `/v1/limits/${limit.id}`)).counters[0].used, 440);
    // Direct calls to the same model are outside the pack's scope.
    await client.chat.completions.create(ask);
    await ok('DELETE', `/v1/limits/${limit.id}`);
  });
});

describe('a call whose body names no output bound', () => {
  test('is sent with the bound it was reserved at, smaller as the room shrinks, refused below 256', async () => {
    const limit = await ok(
      'POST',
      '/v1/limits',
      { name: 'room', scope: { kind: 'token', id: agent.id }, window: 'week', metric: 'total_tokens', max: 1000 },
      201,
    );
    const client = openaiFor(agent.secret);
    const before = oa.requests.length;
    const unbounded = { model: 'oa/gpt-limit', messages: [{ role: 'user' as const, content: 'hi' }] };
    const answered = await answeredUntilRefused(() => client.chat.completions.create(unbounded));
    const caps = oa.requests
      .slice(before)
      .map((r) => (r.json as { max_completion_tokens: number }).max_completion_tokens);
    // Each call uses 110 tokens, so each next bound is 110 smaller: what is left of 1000 beside the input.
    assert.equal(caps.length, answered);
    assert.ok(answered >= 2, `${answered} answered`);
    for (let i = 1; i < caps.length; i++) assert.equal(caps[i - 1]! - caps[i]!, 110, caps.join(', '));
    assert.ok(caps[0]! < 1000 && caps.at(-1)! >= 256 && caps.at(-1)! - 110 < 256, caps.join(', '));
    // Through a route pack (each attempt in its own provider's spelling) and a preset that names no bound.
    await ok('PATCH', `/v1/limits/${limit.id}`, { max: 100_000 });
    await ok(
      'POST',
      '/v1/presets',
      {
        slug: 'plain',
        model: 'oa/gpt-limit',
        parameters: { temperature: 0 },
        familyScope: ['styleA.chat_completions'],
      },
      201,
    );
    for (const model of ['@route/ab', '@preset/plain']) {
      await client.chat.completions.create({ ...unbounded, model });
      assert.equal((oa.requests.at(-1)!.json as Record<string, unknown>).max_completion_tokens, 4096, model);
    }
    // A body that names its bound is sent with it, nothing added.
    await client.chat.completions.create(ask);
    const sent = oa.requests.at(-1)!.json as Record<string, unknown>;
    assert.deepEqual([sent.max_tokens, 'max_completion_tokens' in sent], [100, false]);
    await ok('DELETE', `/v1/limits/${limit.id}`);
  });
});

describe('limits: bad input', () => {
  const good = { name: 'n', scope: { kind: 'service' }, window: 'day', metric: 'requests', max: 10 };
  test('bodies: unknown fields, wrong kinds, scope ids that are missing, extra or unknown, bounds', async () => {
    const refused: [unknown, string][] = [
      [{ ...good, extra: 1 }, 'INVALID_JSON'],
      [{ ...good, scope: { kind: 'galaxy' } }, 'INVALID_REQUEST'],
      [{ ...good, window: 'fortnight' }, 'INVALID_REQUEST'],
      [{ ...good, metric: 'vibes' }, 'INVALID_REQUEST'],
      [{ ...good, max: 0 }, 'INVALID_REQUEST'],
      [{ ...good, max: 2.5 }, 'INVALID_REQUEST'],
      [{ ...good, metric: 'usd', max: 2e9 }, 'INVALID_REQUEST'],
      [{ ...good, scope: { kind: 'service', id: 'x' } }, 'INVALID_REQUEST'],
      [{ ...good, scope: { kind: 'token' } }, 'INVALID_REQUEST'],
      [{ ...good, scope: { kind: 'token', id: 'tok_nope' } }, 'INVALID_REQUEST'],
      [{ ...good, scope: { kind: 'route_pack', id: 'nope' } }, 'INVALID_REQUEST'],
      [{ ...good, scope: { kind: 'session', id: 'a b' } }, 'INVALID_REQUEST'],
      [{ ...good, name: 'x'.repeat(201) }, 'INVALID_REQUEST'],
      [{ ...good, window: 'gauge' }, 'INVALID_REQUEST'],
      [{ ...good, metric: 'gauge_percent', max: 90 }, 'INVALID_REQUEST'],
      [{ ...good, gauge: { accountId: 'x', windowId: 'w' } }, 'INVALID_REQUEST'],
      [
        { ...good, window: 'gauge', metric: 'gauge_percent', max: 90, gauge: { accountId: 'nope', windowId: 'w' } },
        'INVALID_REQUEST',
      ],
      [
        { ...good, window: 'gauge', metric: 'gauge_percent', max: 120, gauge: { accountId: 'x', windowId: 'w' } },
        'INVALID_REQUEST',
      ],
      ['[]', 'INVALID_REQUEST'],
    ];
    for (const [body, code] of refused) {
      const reply = await svc.request('POST', '/v1/limits', { body });
      assert.equal(reply.status, 400, `${JSON.stringify(body)}: ${reply.text}`);
      assert.equal(reply.json.error.code === 'INVALID_JSON' ? 'INVALID_JSON' : reply.json.error.code, code);
    }
  });

  test('paths and queries: unknown or overlong IDs 404, an unknown query 400, a fixed field 400', async () => {
    for (const id of ['lim_nope', 'x'.repeat(5000)]) {
      assert.equal((await svc.request('GET', `/v1/limits/${id}`)).status, 404);
      assert.equal((await svc.request('PATCH', `/v1/limits/${id}`, { body: { max: 1 } })).status, 404);
      assert.equal((await svc.request('DELETE', `/v1/limits/${id}`)).status, 404);
    }
    assert.equal((await svc.request('GET', '/v1/limits?x=1')).status, 400);
    const made = await ok('POST', '/v1/limits', good, 201);
    assert.equal((await svc.request('PATCH', `/v1/limits/${made.id}`, { body: { window: 'hour' } })).status, 400);
    assert.equal((await svc.request('PATCH', `/v1/limits/${made.id}`, { body: { max: 1.5 } })).status, 400);
    const changed = await ok('PATCH', `/v1/limits/${made.id}`, { max: 20, enabled: false });
    assert.deepEqual([changed.max, changed.enabled], [20, false]);
    await ok('DELETE', `/v1/limits/${made.id}`);
    const audit = await ok('GET', `/v1/audit-events?resourceId=${made.id}`);
    assert.deepEqual(audit.data.map((e: { action: string }) => e.action).sort(), [
      'limit.create',
      'limit.delete',
      'limit.update',
    ]);
  });

  test('an inference token cannot change limits', async () => {
    assert.equal((await svc.request('GET', '/v1/limits', { token: agent.secret })).status, 403);
    assert.equal((await svc.request('POST', '/v1/limits', { body: good, token: agent.secret })).status, 403);
  });
});
