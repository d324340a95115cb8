import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import { cliRunner } from '../helpers/cli-run.ts';
import { addProvider, ANSWER_SENTINEL, PROMPT_SENTINEL, usageLine } from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import type { Reply } from '../helpers/service.ts';

// The request log end to end (docs/api.md, Request log): off, nothing is kept; on, a streamed call and a translated
// call (the Anthropic SDK against a chat-completions model) are kept with both bodies and no secret anywhere, in
// the store or in the answers; the search filters; the byte bound drops the oldest; per-token opt-in. Run by the
// gateway family with one edge thread and again with two (the second thread writes its calls' entries itself).

const KEY_OA = `sk-fakeopenai${process.pid}abcdefghijklmnop`;
const KEY_AN = `sk-ant-fake${process.pid}-abcdefghijkl`;
const TEXT = `Logged ${ANSWER_SENTINEL} answer.`;
const CHAT_MODEL = 'openai/gpt-test';

let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;
let inferenceToken = '';
let inferenceTokenId = '';

before(async () => {
  [oa, an, svc] = await Promise.all([
    openaiFake.start({ apiKey: KEY_OA }),
    anthropicFake.start({ apiKey: KEY_AN }),
    startInProcess(),
  ]);
  oa.setModels([{ id: 'gpt-test' }]);
  an.setModels([{ id: 'claude-test-1' }]);
  oa.setOutput({ text: TEXT, chunks: 3 });
  assert.equal(await addProvider(svc, { kind: 'openai', baseUrl: oa.baseUrl, credential: KEY_OA }), 1);
  assert.equal(await addProvider(svc, { kind: 'anthropic', baseUrl: an.baseUrl, credential: KEY_AN }), 1);
  const created = await svc.request('POST', '/v1/tokens', { body: { name: 'agent', scopes: ['inference'] } });
  assert.equal(created.status, 201, created.text);
  svc.markSecretBearing(created);
  inferenceToken = created.json.secret;
  inferenceTokenId = created.json.token.id;
});
after(async () => {
  await setLog({ enabled: false, tokenIds: [], maxMegabytes: 256 });
  await svc?.stop();
  await Promise.all([oa?.close(), an?.close()]);
});

const { cli, ok, printed } = cliRunner(() => {
  const env: NodeJS.ProcessEnv = { ...process.env, SWITCHYARD_HOME: svc.home };
  delete env.SWITCHYARD_PORT;
  delete env.SWITCHYARD_TOKEN;
  return env;
});

async function setLog(requestLog: Record<string, unknown>): Promise<void> {
  const reply = await svc.request('PATCH', '/v1/settings', { body: { requestLog } });
  assert.equal(reply.status, 200, reply.text);
}

/** A chat completion; its request ID. `stream` reads the whole event stream. */
async function chat(content: string, options: { stream?: boolean; token?: string; session?: string } = {}) {
  const reply = await svc.request('POST', '/v1/chat/completions', {
    body: { model: CHAT_MODEL, messages: [{ role: 'user', content }], stream: options.stream ?? false },
    token: options.token ?? svc.adminToken,
    headers: {
      'x-switchyard-session': options.session ?? 'sess-a',
      // A secret in a header the client chose: never kept.
      'x-custom-auth': `Bearer ${KEY_AN}`,
    },
  });
  assert.equal(reply.status, 200, reply.text);
  return { reqId: reply.headers['x-request-id']!, reply };
}

/** The entry of a call, once its usage is settled: written right after, its commit a few milliseconds later. */
async function entryOf(reqId: string): Promise<Reply> {
  await usageLine(svc, reqId);
  const deadline = Date.now() + 5000;
  for (;;) {
    const reply = await svc.request('GET', `/v1/requests/${reqId}`);
    if (reply.status === 200 || Date.now() > deadline) return reply;
  }
}

async function list(query = ''): Promise<Reply> {
  const reply = await svc.request('GET', `/v1/requests${query}`);
  assert.equal(reply.status, 200, reply.text);
  return reply;
}

function assertNoSecret(text: string, where: string): void {
  for (const secret of [KEY_OA, KEY_AN, svc.adminToken, inferenceToken])
    assert.ok(!text.includes(secret), `${where} holds a secret`);
}

describe('request log', () => {
  test('off (the default): nothing is stored', async () => {
    const { reqId } = await chat('not logged');
    await usageLine(svc, reqId);
    // A call logged after it, once the log is on, is then the only entry.
    await setLog({ enabled: true });
    const { reqId: marker } = await chat('marker');
    assert.equal((await entryOf(marker)).status, 200);
    assert.equal((await svc.request('GET', `/v1/requests/${reqId}`)).status, 404);
    assert.deepEqual(
      (await list()).json.data.map((i: { id: string }) => i.id),
      [marker],
    );
  });

  test('a streamed call: both bodies, the stream joined in order, headers without secrets', async () => {
    const { reqId, reply } = await chat(`streamed ${PROMPT_SENTINEL} ${svc.adminToken}`, {
      stream: true,
      session: 'sess-stream',
    });
    const entry = (await entryOf(reqId)).json;
    assert.equal(entry.id, reqId);
    assert.equal(entry.op, 'chat.completions');
    assert.equal(entry.path, '/v1/chat/completions');
    assert.equal(entry.clientModel, CHAT_MODEL);
    assert.equal(entry.modelId, CHAT_MODEL);
    assert.equal(entry.providerId, 'openai');
    assert.equal(entry.session, 'sess-stream');
    assert.equal(entry.outcome, 'ok');
    assert.equal(entry.status, 200);
    assert.equal(entry.stream, true);
    assert.equal(entry.errorCode, null);
    assert.ok(Date.parse(entry.receivedAt) <= Date.parse(entry.startedAt));
    assert.ok(entry.durationMs >= 0 && entry.firstByteMs >= 0 && entry.firstByteMs <= entry.durationMs);
    assert.equal(typeof entry.usage.inputTokens, 'number');
    const sent = JSON.parse(entry.request.body.text);
    assert.equal(sent.model, CHAT_MODEL, "the client's body, before the model is rewritten");
    assert.match(sent.messages[0].content, new RegExp(`streamed ${PROMPT_SENTINEL} \\[redacted\\]`));
    assert.equal(entry.response.body.text, reply.text, 'the stream as the client got it');
    assert.match(entry.response.body.text, /data: \[DONE\]/);
    assert.equal(entry.request.headers['x-switchyard-session'], 'sess-stream');
    for (const name of ['authorization', 'x-custom-auth'])
      assert.equal(entry.request.headers[name], undefined, `${name} is dropped`);
    assert.match(entry.response.headers['content-type'], /^text\/event-stream/);
    assert.equal(entry.request.body.truncated, false);
  });

  test('a translated call: Messages from the Anthropic SDK to a chat-completions model', async () => {
    const anthropic = new Anthropic({ baseURL: svc.url, apiKey: svc.adminToken, maxRetries: 0 });
    const { data, response } = await anthropic.messages
      .create({ model: CHAT_MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'translated hello' }] })
      .withResponse();
    const reqId = response.headers.get('x-request-id')!;
    const entry = (await entryOf(reqId)).json;
    assert.equal(entry.op, 'messages');
    assert.equal(entry.path, '/v1/messages');
    assert.equal(entry.modelId, CHAT_MODEL);
    assert.equal(JSON.parse(entry.request.body.text).messages[0].content, 'translated hello');
    assert.deepEqual(JSON.parse(entry.response.body.text).content, data.content, 'the answer in the client protocol');
    assert.equal(entry.request.headers['x-api-key'], undefined);
    assert.equal(typeof entry.request.headers['anthropic-version'], 'string');
    // A whole answer: its first byte came with the rest, before the call was done.
    assert.ok(
      typeof entry.firstByteMs === 'number' && entry.firstByteMs <= entry.durationMs,
      String(entry.firstByteMs),
    );
  });

  test('no secret in the answers or in the store', async () => {
    const page = await list('?limit=200');
    assertNoSecret(page.text, 'the list');
    for (const item of page.json.data) assertNoSecret((await entryOf(item.id)).text, item.id);
    assertNoSecret(readFileSync(join(svc.home, 'store.mdb')).toString('latin1'), 'store.mdb');
  });

  test('search: session, model, status, from/to, limit and cursor; newest first, items without bodies', async () => {
    const a = (await chat('one', { session: 'sess-q' })).reqId;
    const b = (await chat('two', { session: 'sess-q' })).reqId;
    await entryOf(a);
    await entryOf(b);
    const bySession = (await list('?session=sess-q')).json;
    assert.deepEqual(
      bySession.data.map((i: { id: string }) => i.id),
      [b, a],
    );
    assert.equal(bySession.data[0].request, undefined, 'no bodies in a list');
    assert.equal(bySession.nextCursor, null);
    const page = (await list('?session=sess-q&limit=1')).json;
    assert.deepEqual([page.data[0].id, page.nextCursor], [b, b]);
    const rest = (await list(`?session=sess-q&limit=1&cursor=${page.nextCursor}`)).json;
    assert.deepEqual([rest.data[0].id, rest.nextCursor], [a, null]);
    assert.ok((await list(`?model=${CHAT_MODEL}&status=ok`)).json.data.length >= 2);
    assert.ok((await list('?status=200')).json.data.length >= 2);
    assert.equal((await list('?status=failed')).json.data.length, 0);
    assert.equal((await list('?model=nope/nope')).json.data.length, 0);
    const at = (await entryOf(a)).json.receivedAt;
    const when = encodeURIComponent(at);
    const around = (await list(`?session=sess-q&from=${when}&to=${when}`)).json;
    assert.ok(around.data.some((i: { id: string }) => i.id === a));
    assert.ok(
      around.data.every((i: { receivedAt: string }) => i.receivedAt === at),
      'both bounds inclusive, to the ms',
    );
  });

  test('bad input on every query parameter and on the path is INVALID_REQUEST naming it', async () => {
    const cases: [string, string][] = [
      ['?limit=0', 'limit'],
      ['?limit=201', 'limit'],
      ['?limit=x', 'limit'],
      ['?status=maybe', 'status'],
      ['?status=600', 'status'],
      ['?from=yesterday', 'from'],
      ['?to=2026-13-01T00:00:00Z', 'to'],
      ['?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', 'from'],
      ['?cursor=abc', 'cursor'],
      [`?session=${'s'.repeat(257)}`, 'session'],
      ['?session=', 'session'],
      [`?model=${'m'.repeat(1025)}`, 'model'],
      ['?nope=1', 'nope'],
      ['?limit=1&limit=2', 'limit'],
    ];
    for (const [query, param] of cases) {
      const reply = await svc.request('GET', `/v1/requests${query}`);
      assert.equal(reply.status, 400, query);
      assert.deepEqual([reply.json.error.code, reply.json.error.param], ['INVALID_REQUEST', param], query);
    }
    for (const [path, status, param] of [
      ['/v1/requests/nope', 400, 'id'],
      [`/v1/requests/req_${'0'.repeat(27)}`, 400, 'id'],
      [`/v1/requests/req_${'0'.repeat(26)}`, 404, 'id'],
      [`/v1/requests/req_${'0'.repeat(26)}?x=1`, 400, 'x'],
    ] as const) {
      const reply = await svc.request('GET', path);
      assert.deepEqual([reply.status, reply.json.error.param], [status, param], path);
    }
  });

  test('scope: the log needs admin; an inference or read token is refused', async () => {
    const read = await svc.request('POST', '/v1/tokens', { body: { name: 'reader', scopes: ['read', 'manage'] } });
    svc.markSecretBearing(read);
    for (const token of [inferenceToken, read.json.secret]) {
      const reply = await svc.request('GET', '/v1/requests', { token });
      assert.deepEqual([reply.status, reply.json.error.details.requiredScope], [403, 'admin']);
    }
  });

  test('switchyard requests [--session] [--json] and requests show ID', async () => {
    const listed = JSON.parse(await ok(['requests', '--session', 'sess-q', '--limit', '1', '--json']));
    assert.equal(listed.data.length, 1);
    const id = listed.data[0].id as string;
    const table = await ok(['requests', '--session', 'sess-q']);
    assert.match(table, new RegExp(`^ID .*\\n${id} `, 's'));
    assert.match(await ok(['requests', 'show', id]), /request body \(\d+ bytes\):\n\{"model":"openai\/gpt-test"/);
    const bad = await cli(['requests', '--status', 'nope']);
    assert.equal(bad.status, 2, bad.stderr);
    assert.match(bad.stderr, /--status must be/);
    for (const text of printed) assertNoSecret(text, 'the CLI output');
  });

  test('replay: the logged call on another model, with both usages, costs and their difference', async () => {
    await setLog({ enabled: true, tokenIds: [] });
    // Priced, so that the costs are estimates the test can work out (USD per million tokens).
    const prices = {
      [CHAT_MODEL]: { inputPerMTok: 2, outputPerMTok: 8 },
      'anthropic/claude-test-1': { inputPerMTok: 3, outputPerMTok: 15 },
    };
    for (const [id, pricing] of Object.entries(prices)) {
      const r = await svc.request('PATCH', `/v1/catalog/models/${encodeURIComponent(id)}`, { body: { pricing } });
      assert.equal(r.status, 200, r.text);
    }
    const { reqId } = await chat('replay me', { stream: true, session: 'sess-r' });
    const original = (await entryOf(reqId)).json;
    const replayed = await svc.request('POST', `/v1/requests/${reqId}/replay`, {
      body: { model: 'anthropic/claude-test-1' },
    });
    assert.equal(replayed.status, 200, replayed.text);
    const r = replayed.json;
    // Whole, not streamed, and translated back to the chat-completions shape the call was made in.
    assert.equal(r.result.object, 'chat.completion');
    assert.equal(r.replay.status, 200);
    const line = await usageLine(svc, r.replayRequestId);
    assert.deepEqual(
      [line.modelId, r.replay.modelId, r.original.modelId],
      ['anthropic/claude-test-1', 'anthropic/claude-test-1', CHAT_MODEL],
    );
    assert.deepEqual(r.original.usage, original.usage);
    assert.deepEqual(r.replay.usage, line.usage);
    const cost = (
      u: { inputTokens: number | null; outputTokens: number | null },
      p: { inputPerMTok: number; outputPerMTok: number },
    ) => ((u.inputTokens ?? 0) * p.inputPerMTok + (u.outputTokens ?? 0) * p.outputPerMTok) / 1e6;
    const before = cost(original.usage, prices[CHAT_MODEL]!);
    const after = cost(line.usage!, prices['anthropic/claude-test-1']!);
    assert.ok(Math.abs(r.original.estimatedCostUsd - before) < 1e-12, `${r.original.estimatedCostUsd} vs ${before}`);
    assert.ok(Math.abs(r.replay.estimatedCostUsd - after) < 1e-12);
    assert.deepEqual(
      [r.difference.inputTokens, r.difference.outputTokens, r.difference.totalTokens],
      [
        line.usage!.inputTokens! - original.usage.inputTokens,
        line.usage!.outputTokens! - original.usage.outputTokens,
        line.usage!.totalTokens! - original.usage.totalTokens,
      ],
    );
    assert.ok(Math.abs(r.difference.estimatedCostUsd - (after - before)) < 1e-12);
    // The CLI: the same replay's three lines (each run is a replay of its own, with the same fake answer).
    const text = await ok(['replay', reqId, '--model', 'anthropic/claude-test-1']);
    assert.match(text, /^original openai\/gpt-test -> openai\/gpt-test: .*\nreplay {3}anthropic\/claude-test-1 -> /s);
    assert.match(
      text,
      new RegExp(`difference: \\${r.difference.inputTokens >= 0 ? '+' : '-'}${Math.abs(r.difference.inputTokens)} in`),
    );
    const usage = await cli(['replay', reqId]);
    assert.equal(usage.status, 2, usage.stderr);
    // The replay is a call of its own: logged too, under its own ID.
    assert.equal((await entryOf(r.replayRequestId)).json.modelId, 'anthropic/claude-test-1');
    assertNoSecret(replayed.text, 'the replay answer');
  });

  test('replay refuses bad input: unknown or malformed IDs, bodies, models, scopes', async () => {
    const { reqId } = await chat('replay me again', { session: 'sess-r' });
    await entryOf(reqId);
    const post = (id: string, body: unknown, token?: string) =>
      svc.request('POST', `/v1/requests/${id}/replay`, { body, ...(token && { token }) });
    const cases: [Promise<Reply>, number, string, string | null][] = [
      [post('req_01ARZ3NDEKTSV4RRFFQ69G5FAV', { model: CHAT_MODEL }), 404, 'NOT_FOUND', 'id'],
      [post('not-an-id', { model: CHAT_MODEL }), 400, 'INVALID_REQUEST', 'id'],
      [post(reqId, {}), 400, 'INVALID_REQUEST', 'model'],
      [post(reqId, { model: '' }), 400, 'INVALID_REQUEST', 'model'],
      [post(reqId, { model: CHAT_MODEL, stream: true }), 400, 'INVALID_JSON', 'stream'],
      [post(reqId, { model: 'nobody/none' }), 404, 'MODEL_NOT_FOUND', 'model'],
      [post(reqId, { model: CHAT_MODEL }, inferenceToken), 403, 'FORBIDDEN', null],
    ];
    for (const [reply, status, code, param] of cases) {
      const r = await reply;
      assert.deepEqual([r.status, r.json.error.code, r.json.error.param ?? null], [status, code, param], r.text);
    }
  });

  test('per-token opt-in: only the listed token is logged', async () => {
    await setLog({ enabled: false, tokenIds: [inferenceTokenId] });
    const mine = (await chat('by the agent', { token: inferenceToken, session: 'sess-t' })).reqId;
    const admin = (await chat('by the admin', { session: 'sess-t' })).reqId;
    const entry = (await entryOf(mine)).json;
    assert.equal(entry.tokenId, inferenceTokenId);
    await usageLine(svc, admin);
    assert.deepEqual(
      (await list('?session=sess-t')).json.data.map((i: { id: string }) => i.id),
      [mine],
    );
    assertNoSecret(JSON.stringify(entry), 'the agent entry');
  });

  test('the byte bound (maxMegabytes) drops the oldest entries first', async () => {
    await setLog({ enabled: true, tokenIds: [], maxMegabytes: 1 });
    const big = 'b'.repeat(400 * 1024);
    const made: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { reqId } = await chat(`${i} ${big}`, { session: 'sess-big' });
      await entryOf(reqId);
      made.push(reqId);
    }
    const kept = (await list('?session=sess-big')).json.data.map((i: { id: string }) => i.id);
    assert.deepEqual(kept, made.slice(2).reverse(), 'two of 400 KiB fit in 1 MiB beside the rest');
    assert.equal((await svc.request('GET', `/v1/requests/${made[0]}`)).status, 404);
  });
});
