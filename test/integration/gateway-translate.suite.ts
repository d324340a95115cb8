import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import {
  addProvider,
  ANSWER_SENTINEL,
  distinctUsage,
  requestIds,
  usageLine,
  type ToolCounts,
} from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import type { FakeUsage } from '../fakes/script.ts';
import type { UsageReport } from '../../protocol/gateway.ts';

// Protocol translation end to end, with the official clients unchanged: the Anthropic SDK against a model
// that speaks only chat completions (the openai fake), the openai SDK against a model that speaks only
// Messages (the anthropic fake). The meter gets the upstream's own usage, counter for counter.

const TEXT = `Translated ${ANSWER_SENTINEL} intact.`;
const CHAT_MODEL = 'openai/gpt-test';
const MESSAGES_MODEL = 'anthropic/claude-test-1';
const WEATHER = { type: 'object', properties: { city: { type: 'string' } } } as const;

let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;
let anthropic: Anthropic;
let openai: OpenAI;
const ids = requestIds();

before(async () => {
  [oa, an, svc] = await Promise.all([openaiFake.start(), anthropicFake.start(), startInProcess()]);
  oa.setModels([{ id: 'gpt-test' }]);
  an.setModels([{ id: 'claude-test-1' }]);
  for (const fake of [oa, an]) fake.setOutput({ text: TEXT, chunks: 4, argumentChunks: 3 });
  assert.equal(await addProvider(svc, { kind: 'openai', baseUrl: oa.baseUrl, credential: 'sk-fake-openai' }), 1);
  assert.equal(await addProvider(svc, { kind: 'anthropic', baseUrl: an.baseUrl, credential: 'fake-anthropic-key' }), 1);
  anthropic = new Anthropic({ baseURL: svc.url, apiKey: svc.adminToken, maxRetries: 0, fetch: ids.fetch });
  openai = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0, fetch: ids.fetch });
});
after(async () => {
  await svc?.stop();
  await Promise.all([oa?.close(), an?.close()]);
});

/** What the meter must hold for a chat upstream: its prompt_tokens family, exactly. */
const chatMetered = (u: FakeUsage, toolCalls: ToolCounts = {}): UsageReport => ({
  inputTokens: u.inputTokens,
  outputTokens: u.outputTokens,
  cachedInputTokens: u.cachedTokens,
  reasoningTokens: u.reasoningTokens,
  totalTokens: u.inputTokens + u.outputTokens,
  costUsd: null,
  toolCalls,
});
/** For a Messages upstream: input is the three parts' sum; the cache writes, and their 1-hour part, apart. */
const messagesMetered = (u: FakeUsage, toolCalls: ToolCounts = {}): UsageReport => {
  const input = u.inputTokens + u.cacheCreationTokens + u.cachedTokens;
  return {
    inputTokens: input,
    outputTokens: u.outputTokens,
    cachedInputTokens: u.cachedTokens,
    cacheWriteTokens: u.cacheCreationTokens,
    cacheWrite1hTokens: u.cacheCreation1hTokens ?? 0,
    reasoningTokens: null,
    totalTokens: input + u.outputTokens,
    costUsd: null,
    toolCalls,
  };
};

async function assertMetered(reqId: string, op: string, modelId: string, usage: UsageReport): Promise<void> {
  const line = await usageLine(svc, reqId);
  assert.deepEqual(line, { reqId, op, providerId: modelId.split('/')[0], modelId, outcome: 'ok', usage });
}

describe('styleB client over a chat-completions model', () => {
  test('messages.create: text, system and usage per counter', async () => {
    const u = distinctUsage(1);
    oa.setUsage(u);
    const { result, reqId } = await ids.call(() =>
      anthropic.messages.create({
        model: CHAT_MODEL,
        max_tokens: 64,
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'hello' }],
      }),
    );
    assert.deepEqual(result.content, [{ type: 'text', text: TEXT }]);
    assert.equal(result.stop_reason, 'end_turn');
    assert.deepEqual(
      [
        result.usage.input_tokens,
        result.usage.cache_read_input_tokens,
        result.usage.cache_creation_input_tokens,
        result.usage.output_tokens,
        result.usage.output_tokens_details?.thinking_tokens,
      ],
      [u.inputTokens - u.cachedTokens, u.cachedTokens, 0, u.outputTokens, u.reasoningTokens],
    );
    const sent = oa.requests.at(-1)!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.deepEqual(sent.json, {
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello' },
      ],
      max_completion_tokens: 64,
    });
    assert.equal(sent.headers['anthropic-version'], undefined, 'styleB headers stay behind');
    await assertMetered(reqId, 'messages', CHAT_MODEL, chatMetered(u));
  });

  test('messages.stream().finalMessage(): parallel tool use; usage asked upstream, merged once', async () => {
    const u = distinctUsage(2);
    oa.setUsage(u);
    const tools: Anthropic.Tool[] = [
      { name: 'get_weather', input_schema: WEATHER },
      { name: 'get_time', input_schema: { type: 'object', properties: {} } },
    ];
    const { result, reqId } = await ids.call(() =>
      anthropic.messages
        .stream({ model: CHAT_MODEL, max_tokens: 64, tools, messages: [{ role: 'user', content: 'weather?' }] })
        .finalMessage(),
    );
    assert.deepEqual(
      result.content.map((b) => (b.type === 'tool_use' ? [b.name, b.input] : b.type)),
      [
        ['get_weather', { query: 'fake input for get_weather', index: 0 }],
        ['get_time', { query: 'fake input for get_time', index: 1 }],
      ],
    );
    assert.equal(result.stop_reason, 'tool_use');
    assert.deepEqual(
      [result.usage.input_tokens, result.usage.cache_read_input_tokens, result.usage.output_tokens],
      [u.inputTokens - u.cachedTokens, u.cachedTokens, u.outputTokens],
    );
    assert.deepEqual((oa.requests.at(-1)!.json as { stream_options?: unknown }).stream_options, {
      include_usage: true,
    });
    await assertMetered(reqId, 'messages', CHAT_MODEL, chatMetered(u, { get_weather: 1, get_time: 1 }));
  });

  test('streamed text arrives as text deltas', async () => {
    const stream = anthropic.messages.stream({
      model: CHAT_MODEL,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const deltas: string[] = [];
    stream.on('text', (t) => deltas.push(t));
    const message = await stream.finalMessage();
    assert.ok(deltas.length > 1);
    assert.equal(deltas.join(''), TEXT);
    assert.deepEqual(message.content, [{ type: 'text', text: TEXT }]);
  });

  test('the tool runner sends tool results back through the translation', async () => {
    const runner = anthropic.beta.messages.toolRunner({
      model: CHAT_MODEL,
      max_tokens: 64,
      max_iterations: 2,
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [{ type: 'custom', name: 'get_weather', input_schema: WEATHER, run: () => 'sunny' }],
    });
    await runner.runUntilDone();
    const second = oa.requests.at(-1)!.json as {
      messages: {
        role: string;
        content?: unknown;
        tool_calls?: { id: string; function: { name: string } }[];
        tool_call_id?: string;
      }[];
    };
    const [, assistant, tool] = second.messages;
    assert.equal(assistant?.role, 'assistant');
    assert.equal(assistant?.tool_calls?.[0]?.function.name, 'get_weather');
    assert.deepEqual(tool, { role: 'tool', tool_call_id: assistant?.tool_calls?.[0]?.id, content: 'sunny' });
  });

  test('upstream errors keep their status class in the styleB error shape', async () => {
    oa.failNext(
      429,
      { error: { message: 'Rate limit reached.', type: 'requests', code: 'rate_limit_exceeded' } },
      { 'retry-after': '7' },
    );
    const limited = await anthropic.messages
      .create({ model: CHAT_MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    assert.ok(limited instanceof Anthropic.RateLimitError);
    assert.equal(limited.status, 429);
    oa.failNext(400, {
      error: {
        message: "Invalid value for 'temperature'.",
        type: 'invalid_request_error',
        param: 'temperature',
        code: null,
      },
    });
    const bad = await anthropic.messages
      .create({ model: CHAT_MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    assert.ok(bad instanceof Anthropic.BadRequestError);
    assert.deepEqual((bad.error as { error: { details: Record<string, unknown> } }).error.details, {
      providerId: 'openai',
      upstreamStatus: 400,
      upstreamType: 'invalid_request_error',
      upstreamMessage: "Invalid value for 'temperature'.",
    });
    // Agents show error.message only: the provider's reason is in it, and the code stays ours.
    const envelope = (bad.error as { error: { code: string; message: string } }).error;
    assert.equal(envelope.code, 'UPSTREAM_ERROR');
    assert.equal(
      envelope.message,
      "The provider answered with HTTP 400. The provider said: Invalid value for 'temperature'.",
    );
    assert.match(bad.message, /Invalid value for 'temperature'/);
  });

  test('what chat cannot express is a 400 naming the member', async () => {
    const server = await anthropic.messages
      .create({
        model: CHAT_MODEL,
        max_tokens: 8,
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
        messages: [{ role: 'user', content: 'x' }],
      })
      .catch((e: unknown) => e);
    assert.ok(server instanceof Anthropic.BadRequestError);
    assert.equal((server.error as { error: { param: string } }).error.param, 'tools[0].type');
    for (const [body, param] of [
      [{ model: CHAT_MODEL, max_tokens: 8, messages: 'nope' }, 'messages'],
      [
        {
          model: CHAT_MODEL,
          max_tokens: 8,
          messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64' } }] }],
        },
        'messages[0].content[0].source',
      ],
      [{ model: CHAT_MODEL, max_tokens: 8, messages: [7] }, 'messages[0]'],
      [{ model: CHAT_MODEL, max_tokens: 8, container: 'c', messages: [] }, 'container'],
    ] as const) {
      const reply = await svc.request('POST', '/v1/messages', { body });
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.json.error.param, param);
    }
  });
});

describe('styleA client over a Messages model', () => {
  test('chat.completions.create: tools, default max_tokens, usage per counter', async () => {
    const u = distinctUsage(3);
    an.setUsage(u);
    const { result, reqId } = await ids.call(() =>
      openai.chat.completions.create({
        model: MESSAGES_MODEL,
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'weather?' },
        ],
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER } }],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
      }),
    );
    const choice = result.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls');
    const call = choice.message.tool_calls![0]!;
    assert.equal(call.type === 'function' && call.function.name, 'get_weather');
    assert.deepEqual(call.type === 'function' && JSON.parse(call.function.arguments), {
      query: 'fake input for get_weather',
      index: 0,
    });
    const input = u.inputTokens + u.cacheCreationTokens + u.cachedTokens;
    assert.deepEqual(result.usage, {
      prompt_tokens: input,
      completion_tokens: u.outputTokens,
      total_tokens: input + u.outputTokens,
      prompt_tokens_details: { cached_tokens: u.cachedTokens },
    });
    const sent = an.requests.at(-1)!;
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    assert.deepEqual(sent.json, {
      model: 'claude-test-1',
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'weather?' }] }],
      max_tokens: 4096,
      tools: [{ name: 'get_weather', input_schema: WEATHER }],
      tool_choice: { type: 'tool', name: 'get_weather' },
    });
    await assertMetered(reqId, 'chat.completions', MESSAGES_MODEL, messagesMetered(u, { get_weather: 1 }));
  });

  test('streamed with include_usage: one usage chunk, message_start and message_delta merged once', async () => {
    const u = distinctUsage(4);
    an.setUsage(u);
    const { result, reqId } = await ids.call(async () => {
      const stream = await openai.chat.completions.create({
        model: MESSAGES_MODEL,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'hi' }],
      });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      return chunks;
    });
    assert.equal(result.map((c) => c.choices[0]?.delta.content ?? '').join(''), TEXT);
    assert.equal(result.filter((c) => c.usage).length, 1);
    const input = u.inputTokens + u.cacheCreationTokens + u.cachedTokens;
    assert.deepEqual(result.at(-1)!.usage, {
      prompt_tokens: input,
      completion_tokens: u.outputTokens,
      total_tokens: input + u.outputTokens,
      prompt_tokens_details: { cached_tokens: u.cachedTokens },
    });
    assert.equal(result.at(-2)!.choices[0]!.finish_reason, 'stop');
    await assertMetered(reqId, 'chat.completions', MESSAGES_MODEL, messagesMetered(u));
  });

  test(
    'streamed without include_usage: the stream helper assembles tool calls; no usage reaches the ' + 'client',
    async () => {
      const u = distinctUsage(5);
      an.setUsage(u);
      const { result, reqId } = await ids.call(async () => {
        const stream = openai.chat.completions.stream({
          model: MESSAGES_MODEL,
          messages: [{ role: 'user', content: 'weather and time?' }],
          tools: [
            { type: 'function', function: { name: 'get_weather', parameters: WEATHER } },
            { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
          ],
        });
        let sawUsage = false;
        stream.on('chunk', (c) => (sawUsage ||= c.usage !== undefined && c.usage !== null));
        return { final: await stream.finalChatCompletion(), sawUsage };
      });
      assert.equal(result.sawUsage, false);
      const calls = result.final.choices[0]!.message.tool_calls!.map(
        (c) => c.type === 'function' && [c.function.name, JSON.parse(c.function.arguments)],
      );
      assert.deepEqual(calls, [
        ['get_weather', { query: 'fake input for get_weather', index: 0 }],
        ['get_time', { query: 'fake input for get_time', index: 1 }],
      ]);
      await assertMetered(
        reqId,
        'chat.completions',
        MESSAGES_MODEL,
        messagesMetered(u, { get_weather: 1, get_time: 1 }),
      );
    },
  );

  test('the meter holds every counter of the three calls above, cache writes included', async () => {
    const calls = [3, 4, 5].map(distinctUsage);
    const sum = (pick: (u: FakeUsage) => number) => calls.reduce((n, u) => n + pick(u), 0);
    const want = {
      requests: 3,
      inputTokens: sum((u) => u.inputTokens + u.cacheCreationTokens + u.cachedTokens),
      outputTokens: sum((u) => u.outputTokens),
      cachedInputTokens: sum((u) => u.cachedTokens),
      cacheWriteTokens: sum((u) => u.cacheCreationTokens),
      reasoningTokens: 0,
    };
    const summary = async () => {
      const reply = await svc.request('GET', `/v1/usage/summary?modelId=${encodeURIComponent(MESSAGES_MODEL)}`);
      assert.equal(reply.status, 200, reply.text);
      const totals = reply.json.totals as Record<string, number>;
      return Object.fromEntries(Object.keys(want).map((k) => [k, totals[k]]));
    };
    // The meter commits within a second of a call ending (usage.suite.ts polls the same way).
    const deadline = Date.now() + 10_000;
    while (((await summary()).requests ?? 0) < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await summary(), want);
  });

  test('runTools sends the tool results back as one user turn of tool_result blocks', async () => {
    const runner = openai.chat.completions.runTools(
      {
        model: MESSAGES_MODEL,
        messages: [{ role: 'user', content: 'weather?' }],
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              description: 'Weather',
              parameters: { ...WEATHER },
              function: () => 'sunny',
              parse: JSON.parse,
            },
          },
        ],
      },
      { maxChatCompletions: 2 },
    );
    await runner.done();
    const second = an.requests.at(-1)!.json as {
      messages: { role: string; content: { type: string; id?: string; tool_use_id?: string; content?: unknown }[] }[];
    };
    const [, assistant, results] = second.messages;
    const use = assistant?.content.find((b) => b.type === 'tool_use');
    assert.ok(use?.id);
    assert.deepEqual(results, {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }],
    });
  });

  test('upstream errors in the styleA error shape; an in-stream error reaches the client', async () => {
    an.failNext(500, { type: 'error', error: { type: 'api_error', message: 'Internal server error' } });
    const failed = await openai.chat.completions
      .create({ model: MESSAGES_MODEL, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    assert.ok(failed instanceof OpenAI.APIError);
    assert.equal(failed.status, 502);
    an.failNext(400, {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' },
    });
    const long = await openai.chat.completions
      .create({ model: MESSAGES_MODEL, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    assert.ok(long instanceof OpenAI.BadRequestError);
    assert.equal(long.code, 'UPSTREAM_ERROR');
    assert.equal(
      long.message,
      '400 The provider answered with HTTP 400. The provider said: prompt is too long: 210000 tokens > 200000 maximum',
    );
    an.streamErrorNext({ afterChunks: 3 });
    const stream = await openai.chat.completions.create({
      model: MESSAGES_MODEL,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    const broken = await (async () => {
      for await (const _chunk of stream) {
        // read until the error
      }
    })().catch((e: unknown) => e);
    assert.ok(broken instanceof OpenAI.APIError);
    assert.match(broken.message, /Overloaded/);
  });

  test('what Messages cannot express is a 400 naming the member, never a 5xx', async () => {
    const two = await openai.chat.completions
      .create({ model: MESSAGES_MODEL, n: 2, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    assert.ok(two instanceof OpenAI.BadRequestError);
    assert.equal(two.param, 'n');
    for (const [body, param] of [
      [
        {
          model: MESSAGES_MODEL,
          messages: [
            {
              role: 'assistant',
              tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '[1' } }],
            },
          ],
        },
        'messages[0].tool_calls[0].function.arguments',
      ],
      [
        {
          model: MESSAGES_MODEL,
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:nope' } }] }],
        },
        'messages[0].content[0].image_url.url',
      ],
      [{ model: MESSAGES_MODEL, messages: [{ role: 'user', content: 'x' }], tool_choice: 42 }, 'tool_choice'],
      [{ model: MESSAGES_MODEL, messages: null }, 'messages'],
    ] as const) {
      const reply = await svc.request('POST', '/v1/chat/completions', { body });
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.json.error.param, param);
    }
  });
});

describe('translation is visible', () => {
  test('model lists, catalog records and /v1/capabilities name the translated families', async () => {
    const listA = await svc.request('GET', '/v1/models');
    const byId = new Map(
      (listA.json.data as { id: string; translated_families?: string[] }[]).map((m) => [m.id, m.translated_families]),
    );
    assert.deepEqual(byId.get(CHAT_MODEL), ['styleB.messages']);
    assert.deepEqual(byId.get(MESSAGES_MODEL), ['styleA.chat_completions', 'styleA.responses']);
    const record = await svc.request('GET', `/v1/catalog/models/${encodeURIComponent(MESSAGES_MODEL)}`);
    assert.deepEqual(
      [record.json.families, record.json.translatedFamilies],
      [['styleB.messages'], ['styleA.chat_completions', 'styleA.responses']],
    );
    const caps = await svc.request('GET', '/v1/capabilities');
    const rows = (caps.json.translations as { client: string; upstream: string }[]).map(
      (t) => `${t.client}<-${t.upstream}`,
    );
    for (const row of [
      'styleB.messages<-styleA.chat_completions',
      'styleA.chat_completions<-styleB.messages',
      'styleA.responses<-styleB.messages',
    ])
      assert.ok(rows.includes(row), row);
  });
});

// W3.4 item 5: agents send the provider's own model names. Claude Code's `claude-...` over /v1/messages,
// Codex's over /v1/responses, and a chat client's `gpt-...`, with no alias made for them.
describe('plain upstream model names', () => {
  test('a name one provider lists reaches it, through a translation where needed', async () => {
    const claudeCode = await anthropic.messages.create({
      model: 'claude-test-1',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal((an.requests.at(-1)!.json as { model: string }).model, 'claude-test-1');
    assert.equal(claudeCode.content[0]?.type, 'text');
    const codex = await openai.responses.create({ model: 'claude-test-1', input: 'hi', max_output_tokens: 16 });
    assert.equal(codex.status, 'completed');
    assert.equal((an.requests.at(-1)!.json as { model: string }).model, 'claude-test-1');
    const chat = await openai.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(chat.choices[0]?.message.role, 'assistant');
    assert.equal((oa.requests.at(-1)!.json as { model: string }).model, 'gpt-test');
    const unknown = await openai.chat.completions
      .create({ model: 'gpt-nowhere', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(unknown instanceof OpenAI.NotFoundError);
  });

  test('a name two providers list is 404 naming both until routing.providerOrder picks one', async () => {
    assert.equal(
      await addProvider(svc, {
        id: 'mirror',
        kind: 'openai_compatible',
        baseUrl: oa.baseUrl,
        credential: 'sk-fake-openai',
      }),
      1,
    );
    try {
      const both = await openai.chat.completions
        .create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e);
      assert.ok(both instanceof OpenAI.NotFoundError);
      assert.match(both.message, /mirror\/gpt-test, openai\/gpt-test/);
      assert.equal(
        (await svc.request('PATCH', '/v1/settings', { body: { routing: { providerOrder: ['mirror', 'openai'] } } }))
          .json.routing.providerOrder[0],
        'mirror',
      );
      await openai.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
      const line = await svc.waitForLog((l) => l.msg === 'usage' && l.modelId === 'mirror/gpt-test');
      assert.equal(line.outcome, 'ok');
      // A direct ID still wins over the order.
      await openai.chat.completions.create({ model: 'openai/gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    } finally {
      await svc.request('PATCH', '/v1/settings', { body: { routing: { providerOrder: [] } } });
      await svc.request('DELETE', '/v1/providers/mirror');
    }
  });

  test('routing.providerOrder is validated', async () => {
    for (const providerOrder of [['Bad ID'], 'openai', Array.from({ length: 33 }, (_, i) => `p${i}`), ['a', 'a']]) {
      const reply = await svc.request('PATCH', '/v1/settings', { body: { routing: { providerOrder } } });
      assert.equal(reply.status, 400, JSON.stringify(providerOrder));
    }
  });
});
