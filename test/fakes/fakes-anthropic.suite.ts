import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import * as anthropicFake from './anthropic.ts';
import * as ollamaFake from './ollama.ts';
import * as openaiFake from './openai.ts';

// The official Anthropic client against the Anthropic fake and against the two local servers that speak
// its Messages API (llama-server, Ollama); and the openai client against Ollama's OpenAI layer.

const KEY = 'fake-anthropic-key-0001';
const TOOLS = [{ name: 'get_weather', input_schema: { type: 'object' as const, properties: {} } }];

describe('anthropic fake, driven by the Anthropic SDK', () => {
  let fake: anthropicFake.AnthropicFake;
  let client: Anthropic;

  before(async () => {
    fake = await anthropicFake.start({ apiKey: KEY });
    client = new Anthropic({ baseURL: fake.baseUrl, apiKey: KEY, maxRetries: 0 });
  });
  after(() => fake.close());

  it('messages: a plain answer with the cache counters', async () => {
    fake.setUsage({ inputTokens: 50, outputTokens: 9, cachedTokens: 20, cacheCreationTokens: 4 });
    const message = await client.messages.create({
      model: 'claude-test',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(message.type, 'message');
    assert.deepEqual(message.content, [{ type: 'text', text: anthropicFake.DEFAULT_OUTPUT.text }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.deepEqual(
      [
        message.usage.input_tokens,
        message.usage.output_tokens,
        message.usage.cache_read_input_tokens,
        message.usage.cache_creation_input_tokens,
      ],
      [50, 9, 20, 4],
    );
    // The v1 SDK sends its key as a Bearer token, with API version 2026-10-21.
    const recorded = fake.requests.at(-1);
    assert.deepEqual([recorded?.headers.authorization, recorded?.headers['x-api-key']], [`Bearer ${KEY}`, undefined]);
    assert.equal(recorded?.headers['anthropic-version'], '2026-10-21');
    fake.setUsage({ ...anthropicFake.DEFAULT_USAGE });
  });

  it('messages: a tool_use block per offered tool, plain and streamed', async () => {
    const plain = await client.messages.create({
      model: 'claude-test',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'go' }],
      tools: TOOLS,
    });
    assert.equal(plain.stop_reason, 'tool_use');
    assert.deepEqual(
      plain.content.map((b) => b.type),
      ['text', 'tool_use'],
    );

    const stream = client.messages.stream({
      model: 'claude-test',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'go' }],
      tools: TOOLS,
    });
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type));
    const final = await stream.finalMessage();
    const tool = final.content.find((b) => b.type === 'tool_use');
    assert.deepEqual(tool?.type === 'tool_use' ? [tool.name, tool.input] : null, [
      'get_weather',
      { query: 'fake input for get_weather', index: 0 },
    ]);
    assert.equal(final.usage.output_tokens, anthropicFake.DEFAULT_USAGE.outputTokens);
    assert.equal(final.stop_reason, 'tool_use');
    // The SDK drops `ping` before the caller sees events; the raw-HTTP tests check it is sent.
    assert.deepEqual(
      [types[0], types[1], types[2], types.at(-2), types.at(-1)],
      ['message_start', 'content_block_start', 'content_block_delta', 'message_delta', 'message_stop'],
    );
  });

  it('messages: a scripted thinking block and web search, as the SDK parses them, plain and streamed', async () => {
    fake.setOutput({
      text: 'Found it.',
      toolCalls: 'none',
      thinking: { text: 'Let me search.', signature: 'c2lnbmF0dXJl' },
      webSearch: { query: 'switchyard', results: [{ url: 'https://example.com/a', title: 'A' }] },
    });
    const params = {
      model: 'claude-test',
      max_tokens: 2048,
      thinking: { type: 'enabled' as const, budget_tokens: 1024 },
      messages: [{ role: 'user' as const, content: 'search' }],
      tools: [{ type: 'web_search_20250305' as const, name: 'web_search' as const }],
    };
    const plain = await client.messages.create(params);
    const final = await client.messages.stream(params).finalMessage();
    for (const message of [plain, final]) {
      assert.deepEqual(
        message.content.map((b) => b.type),
        ['thinking', 'server_tool_use', 'web_search_tool_result', 'text'],
      );
      const [thinking, call, result] = message.content;
      assert.deepEqual(thinking, { type: 'thinking', thinking: 'Let me search.', signature: 'c2lnbmF0dXJl' });
      assert.deepEqual(call?.type === 'server_tool_use' ? call.input : null, { query: 'switchyard' });
      assert.equal(
        result?.type === 'web_search_tool_result' ? result.tool_use_id : null,
        call?.type === 'server_tool_use' ? call.id : undefined,
      );
      assert.equal(message.usage.server_tool_use?.web_search_requests, 1);
    }
    // Without the server tool, or without thinking enabled, neither block is written.
    const bare = await client.messages.create({ ...params, tools: undefined, thinking: undefined });
    assert.deepEqual(
      bare.content.map((b) => b.type),
      ['text'],
    );
    fake.setOutput({ ...anthropicFake.DEFAULT_OUTPUT });
  });

  it("refuses tools as Anthropic's API does: bad or repeated names, OpenAI's types, 5 breakpoints", async () => {
    const send = (body: Record<string, unknown>) =>
      client.messages
        .create({ model: 'claude-test', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }], ...body })
        .then(
          () => null,
          (err: unknown) => (err instanceof Anthropic.BadRequestError ? err.message : String(err)),
        );
    const schema = { type: 'object', properties: {} };
    const ephemeral = { type: 'ephemeral' };
    assert.match(String(await send({ tools: [{ name: 'a.b', input_schema: schema }] })), /should match pattern/);
    assert.match(String(await send({ tools: [{ name: 'x'.repeat(65), input_schema: schema }] })), /pattern/);
    assert.match(
      String(
        await send({
          tools: [
            { name: 'a', input_schema: schema },
            { name: 'a', input_schema: schema },
          ],
        }),
      ),
      /must be unique/,
    );
    // OpenAI's tool shapes, which a translation must never send.
    assert.match(String(await send({ tools: [{ type: 'function', name: 'f' }] })), /expected tags/);
    assert.match(String(await send({ tools: [{ type: 'web_search' }] })), /expected tags/);
    const marked = [1, 2, 3, 4, 5].map((n) => ({ name: `t${n}`, input_schema: schema, cache_control: ephemeral }));
    assert.match(String(await send({ tools: marked })), /maximum of 4/);
    assert.equal(await send({ tools: marked.slice(0, 4) }), null);
  });

  it('count_tokens answers the configured input tokens', async () => {
    const count = await client.messages.countTokens({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.deepEqual(count, { input_tokens: anthropicFake.DEFAULT_USAGE.inputTokens });
  });

  it('an in-stream error arrives as `event: error` and the SDK raises it', async () => {
    fake.streamErrorNext({ afterChunks: 3 });
    const stream = client.messages.stream({
      model: 'claude-test',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hi' }],
    });
    await assert.rejects(
      stream.finalMessage(),
      (err: unknown) => err instanceof Anthropic.APIError && /Overloaded/.test(err.message),
    );
    assert.deepEqual(
      { by: fake.streams.at(-1)?.end?.by, sent: fake.streams.at(-1)?.eventsSent },
      { by: 'errored', sent: 3 },
    );
  });

  it('keeps its header checks: no anthropic-version is a 400 in Anthropic error shape', async () => {
    const response = await fetch(`${fake.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test', max_tokens: 8, messages: [] }),
    });
    assert.equal(response.status, 400);
    const body = (await response.json()) as { type: string; error: { type: string } };
    assert.deepEqual([body.type, body.error.type], ['error', 'invalid_request_error']);
  });
});

describe('llama-server fake, Anthropic Messages API', () => {
  let fake: openaiFake.OpenAIFake;
  before(async () => {
    fake = await openaiFake.start({ flavour: 'llamacpp', apiKey: 'llama-key' });
  });
  after(() => fake.close());

  it('answers the Anthropic SDK, which authenticates with x-api-key; usage without cache counters', async () => {
    const client = new Anthropic({ baseURL: fake.baseUrl, apiKey: 'llama-key', maxRetries: 0 });
    const final = await client.messages
      .stream({ model: 'local', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    assert.equal(final.content[0]?.type === 'text' ? final.content[0].text : null, openaiFake.DEFAULT_OUTPUT.text);
    assert.equal(final.usage.cache_read_input_tokens, undefined);
    const count = await client.messages.countTokens({ model: 'local', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(count.input_tokens, openaiFake.DEFAULT_USAGE.inputTokens);
  });
});

describe('ollama fake, OpenAI and Anthropic compatibility layers', () => {
  let fake: ollamaFake.OllamaFake;
  before(async () => {
    fake = await ollamaFake.start();
  });
  after(() => fake.close());

  it('chat streams with include_usage (usage as the three totals only); embeddings; stateless responses', async () => {
    const client = new OpenAI({ baseURL: `${fake.baseUrl}/v1`, apiKey: 'ollama', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'llama3.2',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    assert.equal(text, ollamaFake.DEFAULT_OUTPUT.text);
    const { inputTokens, outputTokens } = ollamaFake.DEFAULT_USAGE;
    assert.deepEqual(usage, {
      prompt_tokens: inputTokens,
      completion_tokens: outputTokens,
      total_tokens: inputTokens + outputTokens,
    });
    const embedded = await client.embeddings.create({ model: 'nomic-embed-text', input: 'vector me' });
    assert.equal(embedded.data[0]?.embedding.length, ollamaFake.DEFAULT_OUTPUT.embeddingDimensions);
    const response = await client.responses.create({ model: 'llama3.2', input: 'hi' });
    assert.equal(response.output_text, ollamaFake.DEFAULT_OUTPUT.text);
    await assert.rejects(client.responses.retrieve(response.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
  });

  it('answers the Anthropic SDK at the daemon root, tool use included', async () => {
    const client = new Anthropic({ baseURL: fake.baseUrl, apiKey: 'ollama', maxRetries: 0 });
    const message = await client.messages.create({
      model: 'qwen3-coder',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'go' }],
      tools: TOOLS,
    });
    assert.deepEqual(
      message.content.map((b) => b.type),
      ['text', 'tool_use'],
    );
    assert.deepEqual(message.usage, {
      input_tokens: ollamaFake.DEFAULT_USAGE.inputTokens,
      output_tokens: ollamaFake.DEFAULT_USAGE.outputTokens,
    });
  });
});
