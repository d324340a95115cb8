import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Route packs end to end against two fake OpenAI upstreams (and one address nothing listens on): fallback
// per failure class before the first byte, no retry after it, the capacity strategy, usage rows, discovery.

const KEY = `fake-openai-key-${process.pid}`;
let svc: InProcessService;
let a: openaiFake.OpenAIFake;
let b: openaiFake.OpenAIFake;

const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: 'user', content: 'hello' }],
  ...extra,
});
const completion = {
  id: 'chatcmpl-x',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-test',
  choices: [],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
};

async function pack(body: Record<string, unknown>) {
  const reply = await svc.request('POST', '/v1/route-packs', { body });
  assert.equal(reply.status, 201, reply.text);
}

before(async () => {
  a = await openaiFake.start({ apiKey: KEY });
  b = await openaiFake.start({ apiKey: KEY });
  for (const f of [a, b]) f.setModels([{ id: 'gpt-test' }]);
  svc = await startInProcess();
  for (const [id, fake] of [
    ['pa', a],
    ['pb', b],
  ] as const) {
    const created = await svc.request('POST', '/v1/providers', {
      body: { id, kind: 'openai', baseUrl: fake.baseUrl, credential: KEY, timeouts: { headMs: 1000 } },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal((await svc.request('POST', `/v1/providers/${id}/actions/refresh-models`)).status, 200);
  }
  // Port 1 on loopback: nothing listens, so the connect is refused.
  assert.equal(
    (
      await svc.request('POST', '/v1/providers', {
        body: { id: 'dead', kind: 'openai', baseUrl: 'http://127.0.0.1:1/v1', credential: KEY },
      })
    ).status,
    201,
  );
  assert.equal(
    (
      await svc.request('POST', '/v1/catalog/models', {
        body: { providerId: 'dead', upstreamModelId: 'gpt-test', families: ['styleA.chat_completions'] },
      })
    ).status,
    201,
  );
  await pack({
    slug: 'ab',
    displayName: 'A then B',
    routes: [
      { id: 'a', model: 'pa/gpt-test' },
      { id: 'b', model: 'pb/gpt-test' },
    ],
    fallback: { model: 'pb/gpt-test' },
  });
  await pack({
    slug: 'dead-first',
    routes: [{ id: 'dead', model: 'dead/gpt-test' }],
    fallback: { model: 'pb/gpt-test' },
  });
  await pack({
    slug: 'cap',
    strategy: 'capacity',
    routes: [
      { id: 'a', model: 'pa/gpt-test' },
      { id: 'b', model: 'pb/gpt-test' },
    ],
    fallback: { model: 'pb/gpt-test' },
  });
});
after(async () => {
  await svc.stop();
  await a.close();
  await b.close();
});

const counts = (): [number, number] => [a.requests.length, b.requests.length];

describe('fallback before the first byte', () => {
  const cases: [string, () => void, string][] = [
    [
      'rate_limited',
      () => a.failNext(429, { error: { message: 'slow down', type: 'requests' } }, { 'retry-after': '0' }),
      'ab',
    ],
    ['upstream_error', () => a.failNext(500, { error: { message: 'boom', type: 'server_error' } }), 'ab'],
    ['timeout', () => a.hangNext(), 'ab'],
    ['unreachable', () => undefined, 'dead-first'],
  ];
  for (const [reason, arrange, slug] of cases) {
    test(`${reason}: the next route answers and the client sees one clean answer`, async () => {
      arrange();
      const [aBefore, bBefore] = counts();
      const reply = await svc.request('POST', '/v1/chat/completions', { body: chat(`@route/${slug}`) });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.json.object, 'chat.completion');
      assert.equal(b.requests.length, bBefore + 1);
      if (slug === 'ab') assert.equal(a.requests.length, aBefore + 1);
      const line = await svc.waitForLog((l) => l.msg === 'usage' && l.reqId === reply.headers['x-service-request-id']);
      assert.equal((line.route as { fallbackReason: string }).fallbackReason, reason);
    });
  }

  test('an auth failure is not retried', async () => {
    a.failNext(401, { error: { message: 'bad key', type: 'invalid_request_error' } });
    const [, bBefore] = counts();
    const reply = await svc.request('POST', '/v1/chat/completions', { body: chat('@route/ab') });
    assert.equal(reply.json.error.code, 'UPSTREAM_AUTH_FAILED');
    assert.equal(b.requests.length, bBefore);
  });

  test('a stream that fails after its first byte is not retried', async () => {
    a.failMidStreamNext({ afterChunks: 2 });
    const [aBefore, bBefore] = counts();
    const reply = await svc.request('POST', '/v1/chat/completions', { body: chat('@route/ab', { stream: true }) });
    assert.equal(reply.status, 200);
    assert.match(reply.text, /event: error/);
    assert.deepEqual(counts(), [aBefore + 1, bBefore]);
  });

  test('usage routes show the fallback rows with their reason codes', async () => {
    const deadline = Date.now() + 10_000;
    let rows: { packSlug: string; routeId: string; fallback: boolean; fallbackReason: string | null }[] = [];
    while (Date.now() < deadline) {
      rows = (await svc.request('GET', '/v1/usage/routes')).json.data;
      if (rows.filter((r) => r.fallback).length >= 4) break;
      await sleep(50);
    }
    const fallbacks = rows
      .filter((r) => r.fallback)
      .map((r) => `${r.packSlug}/${r.routeId}/${r.fallbackReason}`)
      .sort();
    assert.deepEqual(fallbacks, [
      'ab/b/rate_limited',
      'ab/b/timeout',
      'ab/b/upstream_error',
      'dead-first/@fallback/unreachable',
    ]);
  });
});

describe('capacity strategy', () => {
  const order = async () => {
    const reply = await svc.request('GET', '/v1/route-packs/cap/decision');
    assert.equal(reply.status, 200, reply.text);
    return (reply.json.candidates as { routeId: string; attempt: number | null }[])
      .filter((c) => c.attempt !== null)
      .map((c) => c.routeId);
  };

  test('steers away from an exhausted provider and back after its reset', async () => {
    assert.deepEqual(await order(), ['a', 'b'], 'no signal: pack order');
    a.failNext(200, completion, {
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-limit-requests': '100',
      // Long enough for the next two calls on a busy machine (CI saw a 1 s reset pass before the check).
      'x-ratelimit-reset-requests': '3s',
    });
    assert.equal((await svc.request('POST', '/v1/chat/completions', { body: chat('@route/cap') })).status, 200);
    assert.deepEqual(await order(), ['b', 'a']);
    const [aBefore, bBefore] = counts();
    assert.equal((await svc.request('POST', '/v1/chat/completions', { body: chat('@route/cap') })).status, 200);
    assert.deepEqual(counts(), [aBefore, bBefore + 1]);
    // Back once the reset passes: looked at until it does, at most 10 s.
    const deadline = Date.now() + 10_000;
    let now = await order();
    while (now[0] !== 'a' && Date.now() < deadline) {
      await sleep(100);
      now = await order();
    }
    assert.deepEqual(now, ['a', 'b']);
  });
});

describe('discovery', () => {
  test('packs are listed in both shapes with their fallback families; an unusable pack is omitted', async () => {
    for (const headers of [{}, { 'anthropic-version': '2023-06-01' }] as Record<string, string>[]) {
      const reply = await svc.request('GET', 'anthropic-version' in headers ? '/v1/models?limit=1000' : '/v1/models', {
        headers,
      });
      const data = reply.json.data as {
        id: string;
        display_name?: string;
        families?: string[];
        switchyard?: Record<string, unknown>;
      }[];
      const entry = data.find((m) => m.id === '@route/ab');
      assert.ok(entry);
      assert.equal(entry.display_name, 'A then B');
      // By ID (the SDKs' `models.retrieve`), the same entry.
      const one = await svc.request('GET', '/v1/models/%40route%2Fab', { headers });
      assert.equal(one.status, 200, one.text);
      assert.deepEqual(one.json, entry);
      assert.deepEqual(entry.families, ['styleA.chat_completions', 'styleA.responses']);
      // Its only route serves chat alone; the pack advertises what its fallback (pb/gpt-test) guarantees.
      assert.deepEqual(data.find((m) => m.id === '@route/dead-first')?.families, [
        'styleA.chat_completions',
        'styleA.responses',
      ]);
      assert.equal(JSON.stringify(entry).includes(KEY), false);
    }
    assert.equal((await svc.request('PATCH', '/v1/providers/dead', { body: { enabled: false } })).status, 200);
    const ids = ((await svc.request('GET', '/v1/models')).json.data as { id: string }[]).map((m) => m.id);
    assert.ok(!ids.includes('@route/dead-first'));
    assert.equal((await svc.request('GET', '/v1/models/%40route%2Fdead-first')).json.error.code, 'MODEL_NOT_FOUND');
    assert.ok(ids.includes('@route/ab'));
    assert.equal(
      (await svc.request('POST', '/v1/chat/completions', { body: chat('@route/dead-first') })).json.error.code,
      'MODEL_NOT_FOUND',
    );
  });
});
