import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { openLiveStream } from '../fakes/sse-client.ts';
import { addProvider } from '../helpers/gateway.ts';
import { UWS_ENV } from '../helpers/edge-threads.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import type { Reply } from '../helpers/service.ts';

// Two edge threads (service/edge-threads.ts): a connection is served by the thread the kernel gave it, so each
// check opens connections until both threads have answered (the log line's `edgeThread` says which; the main
// thread's lines have none). What the hot path reads from its copies (tokens, the catalog, the settings) must
// change on every thread before the write that changed it answers; usage and metrics must add up across them.

const KEY = `fake-openai-edge-${process.pid}`;
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let uws = false;

before(async () => {
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels([{ id: 'gpt-test' }, { id: 'gpt-other' }]);
  svc = await startInProcess({ edgeThreads: 2, env: { ...UWS_ENV } });
  // Node 24 has no uWS build here, and node:http serves from one thread (docs/api.md, Edge threads).
  uws = svc.logLines().some((l) => l.msg === 'native uWebSockets.js binary loaded');
  await addProvider(svc, { kind: 'openai', baseUrl: oa.baseUrl, credential: KEY });
});
after(async () => {
  await svc.stop();
  await oa.close();
});

/** Which thread answered: the `edgeThread` of its request line, 0 for the main thread. */
async function threadOf(reply: Reply): Promise<number> {
  const reqId = reply.headers['x-request-id'];
  assert.ok(reqId, 'every answer names its request');
  const line = await svc.waitForLog((l) => l.reqId === reqId && l.msg === 'request');
  return (line.edgeThread as number | undefined) ?? 0;
}

/**
 * Sends `send` on new connections until both threads have answered at least `each` times (64 tries at most: the
 * kernel spreads connections by their ports, so both are all but sure to be met); the replies by thread.
 */
async function onEachThread(send: () => Promise<Reply>, each = 1): Promise<[Reply[], Reply[]]> {
  const by: [Reply[], Reply[]] = [[], []];
  for (let i = 0; i < 64 && (by[0].length < each || by[1].length < each); i++) {
    const reply = await send();
    by[(await threadOf(reply)) as 0 | 1].push(reply);
  }
  assert.ok(by[0].length >= each && by[1].length >= each, `both threads answered: ${by[0].length}, ${by[1].length}`);
  return by;
}

const chat = (model = 'openai/gpt-test') => ({ model, messages: [{ role: 'user', content: 'hi' }] });

describe('two edge threads', () => {
  test('a revoked token is refused on every thread as soon as the revocation answers', async (t) => {
    if (!uws) return t.skip('no uWS build loads on this Node');
    const created = await svc.request('POST', '/v1/tokens', { body: { name: 'edge', scopes: ['read'] } });
    svc.markSecretBearing(created);
    const secret = created.json.secret as string;
    for (const replies of await onEachThread(() => svc.request('GET', '/v1/models', { token: secret })))
      for (const r of replies) assert.equal(r.status, 200, r.text);
    const revoked = await svc.request('DELETE', `/v1/tokens/${created.json.token.id}`);
    assert.equal(revoked.status, 200, revoked.text);
    for (const replies of await onEachThread(() => svc.request('GET', '/v1/models', { token: secret })))
      for (const r of replies) assert.equal(r.status, 401, r.text);
  });

  test('a hidden model stops resolving on every thread as soon as the change answers', async (t) => {
    if (!uws) return t.skip('no uWS build loads on this Node');
    const call = () => svc.request('POST', '/v1/chat/completions', { body: chat('openai/gpt-other') });
    for (const replies of await onEachThread(call)) for (const r of replies) assert.equal(r.status, 200, r.text);
    const hidden = await svc.request('PATCH', `/v1/catalog/models/${encodeURIComponent('openai/gpt-other')}`, {
      body: { hidden: true },
    });
    assert.equal(hidden.status, 200, hidden.text);
    for (const replies of await onEachThread(call)) {
      for (const r of replies) assert.equal((r.json as { error: { code: string } }).error.code, 'MODEL_NOT_FOUND');
    }
  });

  test('a settings change applies on every thread as soon as it answers', async (t) => {
    if (!uws) return t.skip('no uWS build loads on this Node');
    const origin = 'https://edge-threads.example';
    const preflight = () =>
      svc.request('OPTIONS', '/v1/models', {
        token: null,
        headers: { origin, 'access-control-request-method': 'GET' },
      });
    for (const replies of await onEachThread(preflight)) for (const r of replies) assert.equal(r.status, 403, r.text);
    const patched = await svc.request('PATCH', '/v1/settings', { body: { cors: { allowedOrigins: [origin] } } });
    assert.equal(patched.status, 200, patched.text);
    for (const replies of await onEachThread(preflight)) {
      for (const r of replies) {
        assert.equal(r.status, 204, r.text);
        assert.equal(r.headers['access-control-allow-origin'], origin);
      }
    }
  });

  test('gateway calls on both threads are metered and counted exactly once each', async (t) => {
    if (!uws) return t.skip('no uWS build loads on this Node');
    // Every gateway call of this file so far was a good one: /metrics, summed over both threads, and the meter
    // count the same calls.
    const counted = async () =>
      (await svc.request('GET', '/metrics')).text
        .split('\n')
        .filter((l) => l.startsWith('switchyard_gateway_calls_total{') && l.includes('outcome="ok"'))
        .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
    const metered = async () => (await svc.request('GET', '/v1/usage/summary')).json.totals.requests as number;
    const before = await counted();
    const [main, edge] = await onEachThread(() => svc.request('POST', '/v1/chat/completions', { body: chat() }), 2);
    for (const r of [...main, ...edge]) assert.equal(r.status, 200, r.text);
    const after = await counted();
    assert.equal(after - before, main.length + edge.length, 'each call counted once, on the thread that served it');
    // The meter commits within a second of a call ending; an edge thread's usage reaches it in its next batch.
    let total = await metered();
    for (let i = 0; i < 200 && total < after; i++) {
      await new Promise((r) => setTimeout(r, 50));
      total = await metered();
    }
    assert.equal(total, after);
  });

  test("Gauge's live-headers source hears the rate-limit headers of a call an edge thread served", async (t) => {
    if (!uws) return t.skip('no uWS build loads on this Node');
    assert.equal((await svc.request('PATCH', '/v1/settings', { body: { gauge: { enabled: true } } })).status, 200);
    const completion = {
      id: 'chatcmpl-edge',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-test',
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    };
    // Each call's answer names another remaining count, until one is served by the second thread.
    let remaining = 0;
    for (let i = 0; i < 64 && remaining === 0; i++) {
      oa.failNext(200, completion, {
        'x-ratelimit-limit-requests': '5000',
        'x-ratelimit-remaining-requests': String(4000 + i),
        'x-ratelimit-reset-requests': '12ms',
      });
      const reply = await svc.request('POST', '/v1/chat/completions', { body: chat() });
      assert.equal(reply.status, 200, reply.text);
      if ((await threadOf(reply)) === 1) remaining = 4000 + i;
    }
    assert.ok(remaining > 0, 'a call reached the second thread');
    let windows: { kind: string; remaining: number }[] = [];
    for (let i = 0; i < 200 && windows[0]?.remaining !== remaining; i++) {
      const reading = (await svc.request('GET', '/v1/gauge/readings?accountId=live-headers.openai')).json.data[0];
      windows = reading?.windows ?? [];
      if (windows[0]?.remaining !== remaining) await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(
      windows.map((w) => [w.kind, w.remaining]),
      [['requests', remaining]],
    );
    assert.equal((await svc.request('PATCH', '/v1/settings', { body: { gauge: { enabled: false } } })).status, 200);
  });

  test('event streams are served from both threads, and a limit counts calls from both', async (t) => {
    if (!uws) return t.skip('no uWS build loads on this Node');
    // Sixteen connections: the chance that the kernel gives them all to one thread is 2 in 65,536.
    const streams = await Promise.all(
      Array.from({ length: 16 }, () =>
        openLiveStream({
          port: svc.port,
          path: '/v1/events?types=limit.tripped',
          headers: { authorization: `Bearer ${svc.adminToken}` },
        }),
      ),
    );
    for (const s of streams) assert.equal(s.status, 200);
    const limit = await svc.request('POST', '/v1/limits', {
      body: { name: 'three calls', metric: 'requests', window: 'day', max: 3, scope: { kind: 'service' } },
    });
    assert.equal(limit.status, 201, limit.text);
    const [main, edge] = await onEachThread(() => svc.request('POST', '/v1/chat/completions', { body: chat() }), 3);
    const statuses = [...main, ...edge].map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, 3, `exactly three admitted: ${statuses}`);
    assert.ok(
      statuses.filter((s) => s !== 200).every((s) => s === 429),
      String(statuses),
    );
    for (const s of streams) assert.equal((await s.next())?.event, 'limit.tripped');
    for (const s of streams) s.close();
    const ended = () =>
      svc
        .logLines()
        .filter((l) => l.msg === 'request' && l.route === 'GET /v1/events' && l.outcome === 'client_aborted');
    for (let i = 0; i < 200 && ended().length < streams.length; i++) await new Promise((r) => setTimeout(r, 25));
    const threads = new Set(ended().map((l) => (l.edgeThread as number | undefined) ?? 0));
    assert.deepEqual([...threads].sort(), [0, 1], 'both threads served a stream');
    assert.equal((await svc.request('DELETE', `/v1/limits/${limit.json.id}`)).status, 200);
  });

  test('a dollar limit is admitted on both threads at the price the main thread sends, to its bound', async (t) => {
    if (!uws) return t.skip('no uWS build loads on this Node');
    oa.setUsage({ inputTokens: 10, outputTokens: 100, cachedTokens: 0, reasoningTokens: 0 });
    const model = encodeURIComponent('openai/gpt-test');
    const priced = await svc.request('PATCH', `/v1/catalog/models/${model}`, {
      body: { pricing: { inputPerMTok: 1000, outputPerMTok: 1000 } },
    });
    assert.equal(priced.status, 200, priced.text);
    const limit = await svc.request('POST', '/v1/limits', {
      body: { name: 'a dollar', metric: 'usd', window: 'day', max: 1, scope: { kind: 'service' } },
    });
    assert.equal(limit.status, 201, limit.text);
    const ask = { ...chat(), max_tokens: 100 };
    // Each call spends $0.11 and reserves its body's bytes over 3 plus 100 output tokens at $0.001 a token.
    const reserved = (Math.ceil(Buffer.byteLength(JSON.stringify(ask)) / 3) + 100) * 0.001;
    const expected = Math.floor((1 - reserved) / 0.11) + 1;
    const replies: Reply[] = [];
    for (let i = 0; i < expected + 16; i++)
      replies.push(await svc.request('POST', '/v1/chat/completions', { body: ask }));
    const statuses = replies.map((r) => r.status);
    assert.deepEqual(statuses, [...Array(expected).fill(200), ...Array(16).fill(429)], String(statuses));
    const threads = new Set(await Promise.all(replies.map(threadOf)));
    assert.deepEqual([...threads].sort(), [0, 1], 'both threads admitted or refused');
    const [counter] = (await svc.request('GET', `/v1/limits/${limit.json.id}`)).json.counters;
    assert.ok(Math.abs(counter.used - expected * 0.11) < 1e-9, `spent ${counter.used}`);
    assert.equal(counter.reserved, 0);
    assert.equal((await svc.request('DELETE', `/v1/limits/${limit.json.id}`)).status, 200);
    const unpriced = await svc.request('PATCH', `/v1/catalog/models/${model}`, { body: { pricing: null } });
    assert.equal(unpriced.status, 200, unpriced.text);
  });
});
