import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import * as openaiFake from '../fakes/openai.ts';
import { addProvider } from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Slot affinity for llama-server (W4.2 item 4; docs/api.md, Local runtimes: slot affinity) with the official SDK:
// each session's chat calls ask for one slot with cache_prompt, sessions spread over the slots GET /props names,
// and nothing changes where the slots are unknown, no session is named, or the client chose a slot. In the
// gateway family: again on two edge threads, which must agree on each session's slot.

const SLOTS = 4;
const SESSIONS = 12;
const TURNS = 3;
const KEY = `llama-slot-key-${process.pid}`;
let svc: InProcessService;
let llama: openaiFake.OpenAIFake;
let plain: openaiFake.OpenAIFake;
let token: string;

const sdk = (headers: Record<string, string> = {}) =>
  new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: token, maxRetries: 0, defaultHeaders: headers });
const chat = (model: string, extra: Record<string, unknown> = {}, who = 'anyone') => ({
  model,
  messages: [{ role: 'user' as const, content: `a long shared prefix of ${who}, then a question` }],
  max_tokens: 8,
  ...extra,
});
type Sent = { id_slot?: unknown; cache_prompt?: unknown; user?: unknown };
const chatsOf = (fake: openaiFake.OpenAIFake, from = 0) =>
  fake.requests
    .slice(from)
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => r.json as Sent);

before(async () => {
  [llama, plain] = await Promise.all([
    openaiFake.start({ flavour: 'llamacpp', apiKey: KEY, slots: SLOTS }),
    // An older server, or one that keeps /props behind something else: 404.
    openaiFake.start({ flavour: 'llamacpp' }),
  ]);
  llama.setModels([{ id: 'qwen-local' }]);
  plain.setModels([{ id: 'qwen-old' }]);
  svc = await startInProcess();
  assert.equal(await addProvider(svc, { id: 'llama', kind: 'llamacpp', baseUrl: llama.baseUrl, credential: KEY }), 1);
  assert.equal(await addProvider(svc, { id: 'old', kind: 'llamacpp', baseUrl: plain.baseUrl }), 1);
  const created = await svc.request('POST', '/v1/tokens', { body: { name: 'slots', scopes: ['inference'] } });
  svc.markSecretBearing(created);
  token = created.json.secret;
});
after(async () => {
  await svc?.stop();
  await llama?.close();
  await plain?.close();
});

describe('slot affinity', () => {
  test('each session keeps one slot over its turns, spread over the slots, /props read with a key', async () => {
    const from = llama.requests.length;
    // Sessions named the ways the agents name them: a header, Codex's prompt_cache_key, the APIs' user.
    const namings = (s: number) =>
      s % 3 === 0
        ? { client: sdk({ 'x-switchyard-session': `agent-${s}` }), extra: {} }
        : s % 3 === 1
          ? { client: sdk(), extra: { prompt_cache_key: `agent-${s}` } }
          : { client: sdk(), extra: { user: `agent-${s}` } };
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, s) => {
        const { client, extra } = namings(s);
        for (let t = 0; t < TURNS; t++) {
          if (t === 1) {
            // A streamed turn too.
            const stream = await client.chat.completions.create({
              ...chat('llama/qwen-local', extra, `agent-${s}`),
              stream: true,
            });
            for await (const _ of stream);
          } else await client.chat.completions.create(chat('llama/qwen-local', extra, `agent-${s}`));
        }
      }),
    );
    const sent = chatsOf(llama, from);
    assert.equal(sent.length, SESSIONS * TURNS);
    for (const body of sent) assert.equal(body.cache_prompt, true);
    // The sessions run at once: each request is grouped by the session its prompt names.
    const bySession = new Map<string, Set<unknown>>();
    for (const body of sent as (Sent & { messages: { content: string }[] })[]) {
      const session = body.messages[0]!.content;
      if (!bySession.has(session)) bySession.set(session, new Set());
      bySession.get(session)!.add(body.id_slot);
    }
    assert.equal(bySession.size, SESSIONS);
    const used = new Set<unknown>();
    for (const [session, slots] of bySession) {
      assert.equal(slots.size, 1, `${session} asked for ${[...slots].join(', ')}`);
      const [slot] = slots;
      assert.ok(Number.isInteger(slot) && (slot as number) >= 0 && (slot as number) < SLOTS, `${session}: ${slot}`);
      used.add(slot);
    }
    assert.ok(used.size >= 2, `12 sessions over ${SLOTS} slots used ${used.size}`);
    // /props was asked with the provider's key, as the list was.
    const props = llama.requests.filter((r) => r.path === '/props');
    assert.ok(props.length >= 1);
    assert.ok(props.every((r) => r.headers.authorization === `Bearer ${KEY}`));
  });

  test('no session, a slot the client chose, another operation or unknown slots: the body goes as sent', async () => {
    const from = llama.requests.length;
    await sdk().chat.completions.create(chat('llama/qwen-local'));
    await sdk({ 'x-switchyard-session': 'mine' }).chat.completions.create(
      chat('llama/qwen-local', { id_slot: 1, cache_prompt: false }) as never,
    );
    const [none, chosen] = chatsOf(llama, from);
    assert.equal(none!.id_slot, undefined);
    assert.equal(none!.cache_prompt, undefined);
    assert.deepEqual([chosen!.id_slot, chosen!.cache_prompt], [1, false]);
    const old = plain.requests.length;
    await sdk({ 'x-switchyard-session': 'agent-0' }).chat.completions.create(chat('old/qwen-old'));
    const [unknown] = chatsOf(plain, old);
    assert.equal(unknown!.id_slot, undefined);
    // A Messages call of a session is left alone (llama-server's own Messages API is not documented to take it).
    const before = llama.requests.length;
    const messages = await svc.request('POST', '/v1/messages', {
      token,
      headers: { 'x-switchyard-session': 'agent-0' },
      body: { model: 'llama/qwen-local', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(messages.status, 200, messages.text);
    const sentMessages = llama.requests.slice(before).find((r) => r.path.endsWith('/messages'));
    assert.ok(sentMessages);
    assert.equal((sentMessages.json as Sent).id_slot, undefined);
  });

  test('a session named by 10 KB or odd bytes still gets a slot, and its value reaches no log line whole', async () => {
    const from = llama.requests.length;
    const long = 'x'.repeat(10_240);
    await sdk({ 'x-switchyard-session': long }).chat.completions.create(chat('llama/qwen-local'));
    await sdk().chat.completions.create(chat('llama/qwen-local', { user: 'odd\u0000 ses\u202esion\n' }));
    const [a, b] = chatsOf(llama, from);
    for (const body of [a, b]) assert.ok(Number.isInteger(body!.id_slot));
    assert.equal(JSON.stringify(svc.logLines()).includes(long), false);
  });
});
