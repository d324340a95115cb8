import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import type { RecordedRequest } from '../fakes/http.ts';
import { addProvider } from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Admission on every route family (docs/api.md, Limits; W3.6 item 5): limits.suite.ts covers chat, messages
// through a translation and a route-pack fallback; here the rest. For each family a `requests` limit of 2 on a
// token of its own admits exactly two calls, the third is 429 LIMIT_EXCEEDED, and the fake upstream received
// exactly two requests of that route. Embeddings and responses also count their reported tokens exactly; an
// SDK's retries are calls of their own; and a call that ends badly gives its reservation back.

const OA_KEY = `fake-openai-key-${process.pid}`;
const VL_KEY = `fake-vllm-key-${process.pid}`;
const AN_KEY = `fake-anthropic-key-${process.pid}`;
const MAX = 2;
const clock = Date.parse('2026-11-27T10:00:30Z');
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let vl: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;

async function ok(method: string, path: string, body?: unknown, status = 200) {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.equal(reply.status, status, `${method} ${path}: ${reply.text}`);
  return reply.json;
}

before(async () => {
  oa = await openaiFake.start({ apiKey: OA_KEY });
  oa.setModels(
    ['gpt-test', 'text-embedding-test', 'gpt-image-1', 'gpt-4o-mini-tts', 'gpt-4o-transcribe'].map((id) => ({ id })),
  );
  vl = await openaiFake.start({ flavour: 'compatible', apiKey: VL_KEY });
  vl.setModels([{ id: 'bge-reranker-base' }]);
  an = await anthropicFake.start({ apiKey: AN_KEY });
  an.setModels([{ id: 'claude-test' }]);
  svc = await startInProcess({ now: () => clock });
  assert.equal(await addProvider(svc, { id: 'oa', kind: 'openai', baseUrl: oa.baseUrl, credential: OA_KEY }), 5);
  assert.equal(
    await addProvider(svc, { id: 'vl', kind: 'openai_compatible', baseUrl: vl.baseUrl, credential: VL_KEY }),
    1,
  );
  assert.equal(await addProvider(svc, { id: 'an', kind: 'anthropic', baseUrl: an.baseUrl, credential: AN_KEY }), 1);
  await ok(
    'POST',
    '/v1/presets',
    { slug: 'brief', model: 'oa/gpt-test', parameters: { max_tokens: 50 }, familyScope: ['styleA.chat_completions'] },
    201,
  );
});
after(async () => {
  await svc?.stop();
  for (const fake of [oa, vl, an]) await fake?.close();
});

interface Agent {
  id: string;
  secret: string;
  client: OpenAI;
}

/** A token of the test's own, so that no limit of one test sees another test's calls. */
async function newAgent(name: string, maxRetries = 0, fetch?: typeof globalThis.fetch): Promise<Agent> {
  const created = await svc.request('POST', '/v1/tokens', { body: { name, scopes: ['inference'] } });
  assert.equal(created.status, 201, created.text);
  svc.markSecretBearing(created);
  const { secret } = created.json;
  const client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: secret, maxRetries, ...(fetch && { fetch }) });
  return { id: created.json.token.id, secret, client };
}

async function limitOn(agent: Agent, metric: string, max: number): Promise<string> {
  const body = { name: `${metric} ${max}`, scope: { kind: 'token', id: agent.id }, window: 'day', metric, max };
  return (await ok('POST', '/v1/limits', body, 201)).id;
}

/** The limit's one counter: what was settled, and what calls in flight still reserve. */
async function counterOf(limitId: string): Promise<{ used: number; reserved: number }> {
  const { counters } = await ok('GET', `/v1/limits/${limitId}`);
  assert.equal(counters.length, 1);
  return { used: counters[0].used, reserved: counters[0].reserved };
}

/** What one call came to: answered, or refused by a limit (anything else fails the test). */
type Outcome = 'answered' | 'limited';

async function sdkOutcome(call: Promise<unknown>): Promise<Outcome> {
  try {
    await call;
    return 'answered';
  } catch (err) {
    assert.ok(err instanceof OpenAI.RateLimitError, String(err));
    assert.equal(err.code, 'LIMIT_EXCEEDED');
    return 'limited';
  }
}

async function rawOutcome(agent: Agent, path: string, body: unknown, method = 'POST'): Promise<Outcome> {
  const reply = await svc.request(method, path, { body, token: agent.secret });
  if (reply.status === 200) return 'answered';
  assert.equal(reply.status, 429, reply.text);
  assert.equal(reply.json.error.code, 'LIMIT_EXCEEDED');
  assert.equal(reply.json.error.type, 'rate_limit_error');
  return 'limited';
}

interface Family {
  /** The fake that serves the route, and how its requests of that route look. */
  fake: () => { requests: RecordedRequest[] };
  upstream: (r: RecordedRequest) => boolean;
  call: (agent: Agent) => Promise<Outcome>;
}

/**
 * Under a `requests` limit of MAX on a fresh token: MAX calls answered, the next refused, exactly MAX requests
 * of the route upstream, and the counter at MAX with nothing left reserved. The limit is deleted at the end.
 */
async function admitsExactly({ fake, upstream, call }: Family): Promise<void> {
  const agent = await newAgent('limited');
  const limitId = await limitOn(agent, 'requests', MAX);
  const seen = () => fake().requests.filter(upstream).length;
  const before = seen();
  const outcomes: Outcome[] = [];
  for (let i = 0; i <= MAX; i++) outcomes.push(await call(agent));
  assert.deepEqual(outcomes, [...Array<Outcome>(MAX).fill('answered'), 'limited']);
  assert.equal(seen() - before, MAX, 'the refused call never went upstream');
  assert.deepEqual(await counterOf(limitId), { used: MAX, reserved: 0 });
  await ok('DELETE', `/v1/limits/${limitId}`);
}

const post = (path: string) => (r: RecordedRequest) => r.method === 'POST' && r.path === path;
const PROMPT = [{ role: 'user' as const, content: 'hi' }];

describe('a requests limit admits exactly its calls on each route family', () => {
  test('POST /v1/responses', () =>
    admitsExactly({
      fake: () => oa,
      upstream: post('/v1/responses'),
      call: (a) => sdkOutcome(a.client.responses.create({ model: 'oa/gpt-test', input: 'hi' })),
    }));

  test('GET /v1/responses/{id}: addressed by response ID, admitted like any call', async () => {
    const admin = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
    const { id } = await admin.responses.create({ model: 'oa/gpt-test', input: 'keep this' });
    await admitsExactly({
      fake: () => oa,
      upstream: (r) => r.method === 'GET' && r.path === `/v1/responses/${id}`,
      call: (a) => sdkOutcome(a.client.responses.retrieve(id)),
    });
  });

  test('POST /v1/embeddings', () =>
    admitsExactly({
      fake: () => oa,
      upstream: post('/v1/embeddings'),
      call: (a) => sdkOutcome(a.client.embeddings.create({ model: 'oa/text-embedding-test', input: 'hi' })),
    }));

  test('POST /v1/images/generations', () =>
    admitsExactly({
      fake: () => oa,
      upstream: post('/v1/images/generations'),
      call: (a) => sdkOutcome(a.client.images.generate({ model: 'oa/gpt-image-1', prompt: 'a fox' })),
    }));

  test('POST /v1/images/edits (multipart): refused once the model field is read, the file never relayed', () =>
    admitsExactly({
      fake: () => oa,
      upstream: post('/v1/images/edits'),
      call: async (a) => {
        const image = await toFile(openaiFake.pseudoRandomBytes('fox', 70_001), 'fox.png', { type: 'image/png' });
        return sdkOutcome(a.client.images.edit({ image, model: 'oa/gpt-image-1', prompt: 'make it blue' }));
      },
    }));

  test('POST /v1/audio/speech', () =>
    admitsExactly({
      fake: () => oa,
      upstream: post('/v1/audio/speech'),
      call: (a) =>
        sdkOutcome(
          a.client.audio.speech
            .create({ model: 'oa/gpt-4o-mini-tts', voice: 'alloy', input: 'say this' })
            .then((r) => r.arrayBuffer()),
        ),
    }));

  test('POST /v1/audio/transcriptions (multipart)', () =>
    admitsExactly({
      fake: () => oa,
      upstream: post('/v1/audio/transcriptions'),
      call: async (a) => {
        const file = await toFile(openaiFake.pseudoRandomBytes('talk', 50_003), 'talk.mp3', { type: 'audio/mpeg' });
        return sdkOutcome(a.client.audio.transcriptions.create({ file, model: 'oa/gpt-4o-transcribe' }));
      },
    }));

  test('POST /v1/rerank', () =>
    admitsExactly({
      fake: () => vl,
      upstream: post('/v1/rerank'),
      call: (a) =>
        rawOutcome(a, '/v1/rerank', { model: 'vl/bge-reranker-base', query: 'fox', documents: ['a fox', 'a dog'] }),
    }));

  test('POST /v1/responses/input_tokens (relayed to the provider)', () =>
    admitsExactly({
      fake: () => oa,
      upstream: post('/v1/responses/input_tokens'),
      call: (a) => rawOutcome(a, '/v1/responses/input_tokens', { model: 'oa/gpt-test', input: 'count me' }),
    }));

  test('POST /v1/messages/count_tokens (relayed to the provider)', () =>
    admitsExactly({
      fake: () => an,
      upstream: post('/v1/messages/count_tokens'),
      call: (a) => rawOutcome(a, '/v1/messages/count_tokens', { model: 'an/claude-test', messages: PROMPT }),
    }));

  test('a count the gateway estimates itself (no upstream counts it): a call under requests limits too', async () => {
    const agent = await newAgent('estimated');
    const limitId = await limitOn(agent, 'requests', MAX);
    const body = { model: 'oa/gpt-test', messages: PROMPT };
    const outcomes: Outcome[] = [];
    for (let i = 0; i <= MAX; i++) outcomes.push(await rawOutcome(agent, '/v1/messages/count_tokens', body));
    assert.deepEqual(outcomes, [...Array<Outcome>(MAX).fill('answered'), 'limited']);
    assert.deepEqual(await counterOf(limitId), { used: MAX, reserved: 0 });
    await ok('DELETE', `/v1/limits/${limitId}`);
  });

  test('a preset: @preset/brief', () =>
    admitsExactly({
      fake: () => oa,
      upstream: (r) => post('/v1/chat/completions')(r) && (r.json as { max_tokens?: number }).max_tokens === 50,
      call: (a) => sdkOutcome(a.client.chat.completions.create({ model: '@preset/brief', messages: PROMPT })),
    }));
});

/**
 * Under a `total_tokens` limit on a fresh token, calls whose usage the fake reports differently each time: the
 * counter is their sum, to the token, with nothing left reserved.
 */
async function countsReportedTokens(
  fake: openaiFake.OpenAIFake,
  call: (agent: Agent) => Promise<unknown>,
  totalOf: (u: { inputTokens: number; outputTokens: number }) => number,
): Promise<void> {
  const agent = await newAgent('tokens');
  const limitId = await limitOn(agent, 'total_tokens', 100_000);
  let expected = 0;
  for (const [inputTokens, outputTokens] of [
    [37, 11],
    [1234, 5],
    [2, 999],
  ] as const) {
    fake.setUsage({ inputTokens, outputTokens });
    await call(agent);
    expected += totalOf({ inputTokens, outputTokens });
  }
  assert.deepEqual(await counterOf(limitId), { used: expected, reserved: 0 });
  await ok('DELETE', `/v1/limits/${limitId}`);
}

describe('a total_tokens limit counts what the upstream reported', () => {
  after(() => oa.setUsage(openaiFake.DEFAULT_USAGE));

  test('embeddings: the prompt tokens the fake reported (its total)', () =>
    countsReportedTokens(
      oa,
      (a) => a.client.embeddings.create({ model: 'oa/text-embedding-test', input: 'hi' }),
      (u) => u.inputTokens,
    ));

  test('responses: input plus output tokens as the fake reported them', () =>
    countsReportedTokens(
      oa,
      (a) => a.client.responses.create({ model: 'oa/gpt-test', input: 'hi', max_output_tokens: 1000 }),
      (u) => u.inputTokens + u.outputTokens,
    ));

  test('responses, streamed: the usage of the completed event', () =>
    countsReportedTokens(
      oa,
      async (a) => {
        const stream = await a.client.responses.create({ model: 'oa/gpt-test', input: 'hi', stream: true });
        for await (const _ of stream);
      },
      (u) => u.inputTokens + u.outputTokens,
    ));
});

describe('SDK retries', () => {
  test('each attempt is a call of its own: admitted or refused on its own', async () => {
    const statuses: number[] = [];
    const counting: typeof globalThis.fetch = async (input, init) => {
      const reply = await globalThis.fetch(input, init);
      statuses.push(reply.status);
      return reply;
    };
    const agent = await newAgent('retrying', 2, counting);
    const limitId = await limitOn(agent, 'requests', MAX);
    const chat = () => oa.requests.filter(post('/v1/chat/completions')).length;
    const before = chat();
    oa.failNext(500, { error: { message: 'boom', type: 'server_error' } });
    // The first attempt is admitted and fails upstream; the SDK's retry is admitted too, and answered.
    const answered = await agent.client.chat.completions.create({ model: 'oa/gpt-test', messages: PROMPT });
    assert.ok(answered.choices[0]?.message.content);
    // The upstream's 500 reaches the client as the gateway's 502 UPSTREAM_ERROR, which the SDK retries.
    assert.deepEqual(statuses, [502, 200]);
    assert.deepEqual(await counterOf(limitId), { used: MAX, reserved: 0 });
    // The next call is refused, and so is each of the SDK's retries of it (it retries a 429): none goes upstream.
    assert.equal(
      await sdkOutcome(agent.client.chat.completions.create({ model: 'oa/gpt-test', messages: PROMPT })),
      'limited',
    );
    assert.deepEqual(statuses.slice(2), [429, 429, 429]);
    assert.equal(chat() - before, 2, 'the failed attempt and its retry, nothing of the refused call');
    await ok('DELETE', `/v1/limits/${limitId}`);
  });
});

describe('faults', () => {
  test('a reservation is given back whatever ends the call: a client that leaves, a 400, no upstream', async () => {
    const agent = await newAgent('faults');
    const limitId = await limitOn(agent, 'total_tokens', 100_000);
    const chat = (model = 'oa/gpt-test', signal?: AbortSignal) =>
      agent.client.chat.completions.create({ model, messages: PROMPT }, { signal }).then(
        () => 'answered',
        (err: unknown) => {
          if (err instanceof OpenAI.APIUserAbortError) return 'aborted';
          assert.ok(err instanceof OpenAI.APIError, String(err));
          return err.status;
        },
      );
    /** Polls until nothing is reserved: a call's end settles after its answer, or its abort, is handled. */
    const settled = async () => {
      for (let looks = 0; ; looks++) {
        const c = await counterOf(limitId);
        if (c.reserved === 0) return c;
        assert.ok(looks < 1000, `still reserved: ${c.reserved}`);
      }
    };

    oa.hangNext();
    const seen = oa.requests.length;
    const leaving = new AbortController();
    const left = chat('oa/gpt-test', leaving.signal);
    for (const deadline = Date.now() + 10_000; oa.requests.length === seen; ) {
      assert.ok(Date.now() < deadline, 'the call never reached the upstream');
      await new Promise((r) => setTimeout(r, 2));
    }
    assert.ok((await counterOf(limitId)).reserved > 0, 'the call in flight holds its worst case');
    leaving.abort();
    assert.equal(await left, 'aborted');
    assert.deepEqual(await settled(), { used: 0, reserved: 0 });

    oa.failNext(400, { error: { message: 'bad', type: 'invalid_request_error', param: null, code: null } });
    assert.equal(await chat(), 400);
    assert.deepEqual(await settled(), { used: 0, reserved: 0 });

    await ok(
      'POST',
      '/v1/providers',
      { id: 'dead', kind: 'openai', baseUrl: 'http://127.0.0.1:1/v1', credential: OA_KEY },
      201,
    );
    const families = ['styleA.chat_completions'];
    await ok('POST', '/v1/catalog/models', { providerId: 'dead', upstreamModelId: 'gpt-test', families }, 201);
    assert.equal(await chat('dead/gpt-test'), 502);
    assert.deepEqual(await settled(), { used: 0, reserved: 0 });
    await ok('DELETE', `/v1/limits/${limitId}`);
  });
});
