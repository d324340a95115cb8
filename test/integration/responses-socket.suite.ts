import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import { codexTurn } from '../helpers/codex.ts';
import { addProvider } from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import { callEvents, openSocket, type Json } from '../helpers/socket-client.ts';

// The Responses API over a WebSocket (W4.1 item 2; docs/api.md, Responses over a WebSocket), on this process's
// edge (and on two uWS edge threads in suites-edge2-gateway): the official SDK's socket client, Codex CLI's own
// session (its recorded upgrade headers, its prewarm, its turn) to an Anthropic-style model, continuations by
// `previous_response_id`, lanes, limits, a client that leaves, and bad input of every kind.

const OA = 'oa/gpt-sock';
const CLAUDE = 'anth/claude-sock';
const upgrade = JSON.parse(
  readFileSync(join(import.meta.dirname, '../fixtures/translate/codex/ws-upgrade.json'), 'utf8'),
) as { headers: Record<string, string> };

let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;
let agent: { id: string; secret: string };

const auth = () => ({ authorization: `Bearer ${agent.secret}` });
const open = (headers: Record<string, string> = auth()) => openSocket(svc.port, headers);
const create = (fields: Json) => ({ type: 'response.create', ...fields });

before(async () => {
  [oa, an, svc] = await Promise.all([
    openaiFake.start({ apiKey: 'fake-oa-key' }),
    anthropicFake.start({ apiKey: 'fake-an-key' }),
    startInProcess(),
  ]);
  oa.setModels([{ id: 'gpt-sock' }]);
  an.setModels([{ id: 'claude-sock' }]);
  await addProvider(svc, { id: 'oa', kind: 'openai', baseUrl: oa.baseUrl, credential: 'fake-oa-key' });
  await addProvider(svc, { id: 'anth', kind: 'anthropic', baseUrl: an.baseUrl, credential: 'fake-an-key' });
  const created = await svc.request('POST', '/v1/tokens', { body: { name: 'socket', scopes: ['inference'] } });
  svc.markSecretBearing(created);
  agent = { id: created.json.token.id, secret: created.json.secret };
});
after(async () => {
  await svc?.stop();
  await oa?.close();
  await an?.close();
});

describe('a call over the socket', () => {
  test("the official SDK's socket client streams a call, metered and logged as over HTTP", async () => {
    const client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: agent.secret, maxRetries: 0 });
    const socket = new ResponsesWS(client);
    try {
      socket.send({ type: 'response.create', model: OA, input: 'Say hello.' });
      let text = '';
      let done: Json | null = null;
      for await (const m of socket.stream()) {
        if (m.type !== 'message') continue;
        const event = m.message as Json;
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.completed') {
          done = event.response;
          break;
        }
      }
      assert.equal(text, 'The quick brown fox jumps over the lazy dog, twice.');
      assert.deepEqual([done!.usage.input_tokens, done!.usage.output_tokens], [31, 17]);
    } finally {
      socket.close();
    }
    // The usage and request lines follow the last event the client reads: awaited, not read at once.
    const usage = await svc.waitForLog((l) => l.msg === 'usage' && l.op === 'responses.create');
    assert.deepEqual([usage.outcome, (usage.usage as Json).inputTokens], ['ok', 31]);
    await svc.waitForLog((l) => l.msg === 'request' && l.route === 'POST /v1/responses' && l.status === 200);
    await svc.waitForLog((l) => l.msg === 'request' && l.route === 'GET /v1/responses (WebSocket)' && l.status === 101);
    // What the upstream got is an HTTP stream call, the socket's own fields gone.
    const sent = oa.requests.at(-1)!.json as Json;
    assert.equal(sent.stream, true);
    assert.equal(sent.type, undefined);
  });

  test("Codex CLI's session to an Anthropic-style model: its prewarm stays local, its turn completes", async () => {
    const socket = await open({ ...upgrade.headers, ...auth() });
    const calls = an.requests.length;
    // Recorded: Codex first sends its whole first turn with `generate: false`, then sends it again.
    const turn = codexTurn(1);
    socket.send(create({ ...turn, model: CLAUDE, generate: false }));
    const prewarm = await callEvents(socket);
    assert.deepEqual(
      prewarm.map((e) => e.type),
      ['response.created', 'response.completed'],
    );
    assert.equal(an.requests.length, calls, 'a prewarm sends nothing upstream');
    socket.send(create({ ...turn, model: CLAUDE }));
    const events = await callEvents(socket);
    assert.equal(events.at(-1)!.type, 'response.completed', JSON.stringify(events.at(-1)));
    const sent = an.requests.at(-1)!.json as Json;
    assert.ok(
      (sent.tools as Json[]).some((t) => t.name === 'multi_agent_v1__spawn_agent'),
      'namespaces flattened',
    );
    const usage = events.at(-1)!.response.usage;
    // The fake's Messages usage: 31 input + 3 cache writes + 8 cache reads, 17 output.
    assert.deepEqual([usage.input_tokens, usage.input_tokens_details.cached_tokens, usage.output_tokens], [42, 8, 17]);
    socket.close();
  });
});

describe('continuations', () => {
  test('a call that names the latest response sends only its new input; an unknown one is refused', async () => {
    const socket = await open();
    socket.send(create({ model: CLAUDE, input: 'First question.' }));
    const first = (await callEvents(socket)).at(-1)!;
    assert.equal(first.type, 'response.completed');
    socket.send(create({ model: CLAUDE, previous_response_id: first.response.id, input: 'Second question.' }));
    const second = (await callEvents(socket)).at(-1)!;
    assert.equal(second.type, 'response.completed', JSON.stringify(second));
    // Messages keeps no responses: the upstream got the whole conversation, in order.
    const messages = (an.requests.at(-1)!.json as Json).messages as Json[];
    assert.deepEqual(
      messages.map((m) => m.role),
      ['user', 'assistant', 'user'],
    );
    assert.match(JSON.stringify(messages[0]), /First question/);
    assert.match(JSON.stringify(messages[2]), /Second question/);
    socket.send(create({ model: CLAUDE, previous_response_id: 'resp_nowhere', input: 'Third.' }));
    const refused = await socket.next((m) => m.type === 'error');
    assert.deepEqual([refused.status, refused.error.code], [400, 'previous_response_not_found']);
    // The connection goes on.
    socket.send(create({ model: CLAUDE, previous_response_id: second.response.id, input: 'Third.' }));
    assert.equal((await callEvents(socket)).at(-1)!.type, 'response.completed');
    socket.close();
  });

  test('lanes: calls of two lanes run side by side, each event names its lane', async () => {
    const socket = await open();
    oa.slowStreamNext({ chunkDelayMs: 20 });
    socket.send(create({ model: OA, input: 'one', stream_id: 'left' }));
    socket.send(create({ model: OA, input: 'two', stream_id: 'right' }));
    const [left, right] = await Promise.all([callEvents(socket, 'left'), callEvents(socket, 'right')]);
    for (const events of [left, right]) {
      assert.equal(events.at(-1)!.type, 'response.completed');
      assert.ok(events.every((e) => e.stream_id === events[0]!.stream_id));
    }
    socket.close();
  });
});

describe('limits, revocation and a client that leaves', () => {
  test('a limit refuses a call with an error message; a revoked token refuses the next call', async () => {
    const limit = await svc.request('POST', '/v1/limits', {
      body: { name: 'one', scope: { kind: 'token', id: agent.id }, window: 'day', metric: 'requests', max: 1 },
    });
    assert.equal(limit.status, 201, limit.text);
    const socket = await open();
    try {
      socket.send(create({ model: OA, input: 'first' }));
      assert.equal((await callEvents(socket)).at(-1)!.type, 'response.completed');
      socket.send(create({ model: OA, input: 'second' }));
      const refused = await socket.next((m) => m.type === 'error');
      assert.deepEqual([refused.status, refused.error.code], [429, 'LIMIT_EXCEEDED']);
    } finally {
      await svc.request('DELETE', `/v1/limits/${limit.json.id}`);
    }
    const other = await svc.request('POST', '/v1/tokens', { body: { name: 'revoked', scopes: ['inference'] } });
    svc.markSecretBearing(other);
    const doomed = await open({ authorization: `Bearer ${other.json.secret}` });
    assert.equal((await svc.request('DELETE', `/v1/tokens/${other.json.token.id}`)).status, 200);
    doomed.send(create({ model: OA, input: 'after the revocation' }));
    const unauthorized = await doomed.next((m) => m.type === 'error');
    assert.deepEqual([unauthorized.status, unauthorized.error.code], [401, 'UNAUTHORIZED']);
    socket.close();
    doomed.close();
  });

  test('a client that closes mid-stream stops the upstream call, which is metered as aborted', async () => {
    const socket = await open();
    oa.slowStreamNext({ chunkDelayMs: 5_000 });
    const upstream = oa.nextStream();
    socket.send(create({ model: OA, input: 'a long answer' }));
    await socket.next((m) => m.type === 'response.output_text.delta' || m.type === 'response.created');
    socket.close();
    assert.equal((await (await upstream).ended).by, 'client-closed');
    const line = await svc.waitForLog((l) => l.msg === 'usage' && l.outcome === 'aborted');
    assert.equal(line.op, 'responses.create');
  });
});

describe('bad input', () => {
  test('messages that are not calls get error messages, and the connection goes on; a huge one closes it', async () => {
    const socket = await open();
    const refusals: [unknown, string, string | null][] = [
      [Buffer.from([1, 2, 3]), 'INVALID_REQUEST', null],
      ['{not json', 'INVALID_JSON', null],
      ['[1]', 'INVALID_JSON', null],
      [{ type: 'session.update' }, 'INVALID_REQUEST', 'type'],
      [create({ model: OA, input: 'x', stream_id: '' }), 'INVALID_REQUEST', 'stream_id'],
      [create({ model: OA, input: 'x', background: true }), 'INVALID_REQUEST', 'background'],
      [create({ model: OA, input: 'x', generate: 'no' }), 'INVALID_REQUEST', 'generate'],
      [create({ model: 'oa/not-a-model', input: 'x' }), 'MODEL_NOT_FOUND', 'model'],
      [create({ input: 'x' }), 'INVALID_REQUEST', 'model'],
    ];
    for (const [message, code, param] of refusals) {
      socket.send(message);
      const error = await socket.next((m) => m.type === 'error', String(code));
      assert.equal(error.error.code, code, JSON.stringify(error));
      if (param !== null) assert.equal(error.error.param, param);
      assert.ok(error.status >= 400 && error.status < 500, JSON.stringify(error));
    }
    socket.send(create({ model: OA, input: 'still here' }));
    assert.equal((await callEvents(socket)).at(-1)!.type, 'response.completed');
    socket.send(`{"type":"response.create","input":"${'x'.repeat(17 * 1024 * 1024)}"}`);
    const tooLarge = await socket.next((m) => m.type === 'error', 'the refusal of a large message');
    assert.deepEqual([tooLarge.status, tooLarge.error.code], [413, 'PAYLOAD_TOO_LARGE']);
    assert.equal((await socket.closed).code, 1009);
  });

  test('upgrades without a token or the scope, from a foreign origin, or to another path are refused', async () => {
    const refused = async (headers: Record<string, string>, path = '/v1/responses') =>
      openSocket(svc.port, headers, path).then(
        () => assert.fail('the upgrade was accepted'),
        (err: { status?: number; body?: string }) => err,
      );
    const none = await refused({});
    assert.equal(none.status, 401);
    assert.equal(JSON.parse(none.body!).error.code, 'UNAUTHORIZED');
    const reader = await svc.request('POST', '/v1/tokens', { body: { name: 'reader', scopes: ['read'] } });
    svc.markSecretBearing(reader);
    assert.equal((await refused({ authorization: `Bearer ${reader.json.secret}` })).status, 403);
    assert.equal((await refused({ ...auth(), origin: 'https://evil.example' })).status, 403);
    // Another path is no socket route: node:http's edge answers 404, uWS's its HTTP route's 405.
    assert.ok([404, 405].includes((await refused(auth(), '/v1/chat/completions')).status!));
    // A plain GET of the path is no WebSocket: answered by the HTTP routes, never a 5xx.
    const plain = await svc.request('GET', '/v1/responses');
    assert.ok(plain.status >= 400 && plain.status < 500, plain.text);
  });
});
