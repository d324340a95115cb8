import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import * as anthropicFake from '../fakes/anthropic.ts';
import {
  addProvider,
  ANSWER_SENTINEL,
  assertContentNeverLogged,
  assertTokenNeverUpstream,
  assertUsage,
  distinctUsage,
  messagesUsage,
  NOTHING_REPORTED,
  PROMPT_SENTINEL,
  requestIds,
} from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// The gateway against an `anthropic` provider, driven by the official Anthropic client: Messages plain and
// streamed (the SDK's stream helper and raw `stream: true`), tool use, count_tokens, and the headers the
// upstream sees.
//
// Usage: Anthropic splits the prompt into input_tokens (after the last cache breakpoint),
// cache_creation_input_tokens and cache_read_input_tokens. The meter's inputTokens is their sum, the whole
// prompt, as styleA's prompt_tokens is; cachedInputTokens is cache_read_input_tokens alone.

const KEY = `fake-anthropic-key-${process.pid}`;
const TEXT = `Relayed ${ANSWER_SENTINEL} intact.`;
const TOOLS: Anthropic.Tool[] = [
  {
    name: 'get_weather',
    description: 'Weather',
    input_schema: { type: 'object', properties: { city: { type: 'string' } } },
  },
  { name: 'get_time', description: 'Time', input_schema: { type: 'object', properties: { tz: { type: 'string' } } } },
];
const CALLS = [
  { name: 'get_weather', arguments: { city: 'Oslo', nested: { days: [1, 2], note: 'a "quoted" \\ value' } } },
  { name: 'get_weather', arguments: { city: 'Bergen' } },
  { name: 'get_time', arguments: { tz: 'Europe/Oslo' } },
];
const COUNTS = { get_weather: 2, get_time: 1 };
const MODEL = 'anthropic/claude-test-1';
const ask = (text: string): Anthropic.MessageParam[] => [{ role: 'user', content: `${text} ${PROMPT_SENTINEL}` }];
const messages = { op: 'messages', providerId: 'anthropic', modelId: MODEL };

let svc: InProcessService;
let fake: anthropicFake.AnthropicFake;
let client: Anthropic;
const ids = requestIds();

before(async () => {
  fake = await anthropicFake.start({ apiKey: KEY });
  fake.setModels([{ id: 'claude-test-1', displayName: 'Claude Test 1' }]);
  fake.setOutput({ text: TEXT, chunks: 6, argumentChunks: 4 });
  svc = await startInProcess();
  assert.equal(await addProvider(svc, { kind: 'anthropic', baseUrl: fake.baseUrl, credential: KEY }), 1);
  client = new Anthropic({ baseURL: svc.url, apiKey: svc.adminToken, maxRetries: 0, fetch: ids.fetch });
});
after(async () => {
  await svc?.stop();
  await fake?.close();
});

const last = () => fake.requests.at(-1)!;
const toolUses = (content: Anthropic.ContentBlock[]) =>
  content.flatMap((b) => (b.type === 'tool_use' ? [{ name: b.name, arguments: b.input }] : []));

describe('messages', () => {
  test(
    'plain: the answer and its usage as the fake gave them; key, version and model as the upstream wants ' + 'them',
    async () => {
      const usage = distinctUsage(1);
      fake.setUsage(usage);
      const { result, reqId } = await ids.call(() =>
        client.messages.create({ model: MODEL, max_tokens: 256, messages: ask('hello') }),
      );
      assert.deepEqual(result.content, [{ type: 'text', text: TEXT }]);
      assert.deepEqual(
        [
          result.usage.input_tokens,
          result.usage.cache_creation_input_tokens,
          result.usage.cache_read_input_tokens,
          result.usage.output_tokens,
        ],
        [usage.inputTokens, usage.cacheCreationTokens, usage.cachedTokens, usage.outputTokens],
      );
      assert.deepEqual(last().json, { model: 'claude-test-1', max_tokens: 256, messages: ask('hello') });

      // The client authenticated to the service with its local token; the upstream got the stored key instead.
      const sent = ids.lastSent();
      assert.ok([sent.get('authorization'), sent.get('x-api-key')].some((v) => v?.includes(svc.adminToken)));
      assert.equal(last().headers['x-api-key'], KEY);
      assert.equal(last().headers.authorization, undefined);
      // The SDK states its own API version and the upstream sees that one, not the adapter's default.
      const version = sent.get('anthropic-version');
      assert.match(version ?? '', /^\d{4}-\d\d-\d\d$/);
      assert.equal(last().headers['anthropic-version'], version);

      await assertUsage(svc, reqId, { ...messages, usage: messagesUsage(usage, { cacheCounters: true }) });
    },
  );

  test('tool use, plain: each tool_use block intact, calls counted per name', async () => {
    fake.setOutput({ toolCalls: CALLS });
    const usage = distinctUsage(2);
    fake.setUsage(usage);
    const { result, reqId } = await ids.call(() =>
      client.messages.create({ model: MODEL, max_tokens: 256, messages: ask('weather'), tools: TOOLS }),
    );
    assert.equal(result.stop_reason, 'tool_use');
    assert.deepEqual(toolUses(result.content), CALLS);
    assert.deepEqual((last().json as { tools: unknown }).tools, TOOLS);
    await assertUsage(svc, reqId, {
      ...messages,
      usage: messagesUsage(usage, { cacheCounters: true, toolCalls: COUNTS }),
    });
  });

  test(
    'streamed through messages.stream(): text and tool input accumulate intact; usage from message_start and ' +
      'message_delta',
    async () => {
      fake.setOutput({ toolCalls: CALLS });
      const usage = distinctUsage(3);
      fake.setUsage(usage);
      const deltas: string[] = [];
      const { result: final, reqId } = await ids.call(() => {
        const stream = client.messages.stream({
          model: MODEL,
          max_tokens: 256,
          messages: ask('weather, streamed'),
          tools: TOOLS,
        });
        stream.on('text', (delta) => deltas.push(delta));
        return stream.finalMessage();
      });
      assert.equal(deltas.join(''), TEXT);
      assert.ok(deltas.length > 1);
      assert.deepEqual(final.content[0], { type: 'text', text: TEXT });
      assert.deepEqual(toolUses(final.content), CALLS);
      assert.equal(final.stop_reason, 'tool_use');
      assert.equal(final.usage.output_tokens, usage.outputTokens);
      assert.equal((last().json as { stream?: boolean }).stream, true);
      await assertUsage(svc, reqId, {
        ...messages,
        usage: messagesUsage(usage, { cacheCounters: true, toolCalls: COUNTS }),
      });
    },
  );

  test('streamed raw (stream: true): the events in order, partial JSON that reassembles to the inputs', async () => {
    fake.setOutput({ toolCalls: CALLS });
    const usage = distinctUsage(4);
    fake.setUsage(usage);
    const { result: events, reqId } = await ids.call(async () => {
      const stream = await client.messages.create({
        model: MODEL,
        max_tokens: 256,
        messages: ask('raw'),
        tools: TOOLS,
        stream: true,
      });
      const seen: Anthropic.RawMessageStreamEvent[] = [];
      for await (const event of stream) seen.push(event);
      return seen;
    });
    assert.equal(events[0]?.type, 'message_start');
    assert.deepEqual(
      events.slice(-2).map((e) => e.type),
      ['message_delta', 'message_stop'],
    );
    let text = '';
    const blocks = new Map<number, { name: string; json: string }>();
    for (const e of events) {
      if (e.type === 'content_block_start' && e.content_block.type === 'tool_use')
        blocks.set(e.index, { name: e.content_block.name, json: '' });
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
      if (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta')
        blocks.get(e.index)!.json += e.delta.partial_json;
    }
    assert.equal(text, TEXT);
    assert.deepEqual(
      [...blocks.values()].map((b) => ({ name: b.name, arguments: JSON.parse(b.json) as unknown })),
      CALLS,
    );
    const delta = events.at(-2);
    assert.equal(delta?.type === 'message_delta' ? delta.usage.output_tokens : null, usage.outputTokens);
    await assertUsage(svc, reqId, {
      ...messages,
      usage: messagesUsage(usage, { cacheCounters: true, toolCalls: COUNTS }),
    });
    fake.setOutput({ toolCalls: 'auto' });
  });

  test("count_tokens: the fake's count, the model rewritten, counted but not metered", async () => {
    const usage = distinctUsage(5);
    fake.setUsage(usage);
    const { result, reqId } = await ids.call(() =>
      client.messages.countTokens({ model: MODEL, messages: ask('count me'), tools: TOOLS }),
    );
    assert.deepEqual(result, { input_tokens: usage.inputTokens });
    assert.deepEqual(
      [last().path, (last().json as { model: string }).model],
      ['/v1/messages/count_tokens', 'claude-test-1'],
    );
    assert.equal(last().headers['x-api-key'], KEY);
    assert.equal(last().headers['anthropic-version'], ids.lastSent().get('anthropic-version'));
    await assertUsage(svc, reqId, {
      op: 'messages.count_tokens',
      providerId: 'anthropic',
      modelId: MODEL,
      usage: NOTHING_REPORTED,
    });
  });
});

describe('the API version', () => {
  // `temperature` is gone from the SDK's types (API version 2026-10-21 removed it), so it is added untyped.
  const withTemperature = (text: string): Anthropic.MessageCreateParamsNonStreaming => {
    const params = { model: MODEL, max_tokens: 16, temperature: 0.2, messages: ask(text) };
    return params;
  };

  test("is the client's choice when it states one", async () => {
    const older = new Anthropic({
      baseURL: svc.url,
      apiKey: svc.adminToken,
      maxRetries: 0,
      defaultHeaders: { 'anthropic-version': '2023-06-01' },
    });
    // 2023-06-01 still takes `temperature`; the SDK's own version (2026-10-21) refuses it upstream.
    const message = await older.messages.create(withTemperature('old'));
    assert.equal(message.type, 'message');
    assert.equal(last().headers['anthropic-version'], '2023-06-01');
  });

  test('an upstream refusal that depends on it keeps its status and reaches the SDK as its own error', async () => {
    await assert.rejects(
      client.messages.create(withTemperature('new')),
      (err: unknown) =>
        err instanceof Anthropic.BadRequestError &&
        (err.error as { error?: { code?: string } } | undefined)?.error?.code === 'UPSTREAM_ERROR',
    );
    assert.equal((last().json as { temperature?: number }).temperature, 0.2);
    assert.notEqual(last().headers['anthropic-version'], '2023-06-01');
  });

  test("is the adapter's default when the client states none", async () => {
    const reply = await svc.request('POST', '/v1/messages', {
      body: { model: MODEL, max_tokens: 16, messages: ask('bare') },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.json.type, 'message');
    assert.equal(last().headers['anthropic-version'], '2023-06-01');
  });
});

describe('what never leaves or gets logged', () => {
  test('no upstream request carried the local token', () => {
    assertTokenNeverUpstream(svc.adminToken, fake.requests);
  });

  test('prompts and answers never reach the log', () => {
    assertContentNeverLogged(svc, fake.requests);
  });
});
