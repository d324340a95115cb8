import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import * as openaiFake from '../fakes/openai.ts';
import { addProvider, requestIds, usageLine } from '../helpers/gateway.ts';
import { writeTinyModel } from '../helpers/gguf.ts';
import { tempHome } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// The Responses API for models that only speak chat completions: an openai_compatible model (translated in
// the proxy worker) and an embedded GGUF model (translated in the runtime worker), driven by the official
// openai client, plain, streamed and through a function tool round trip; and token counting for every
// model, labelled by the method that counted.

const KEY = `fake-compat-key-${process.pid}`;
const TEXT = 'Translated answer.';
const COMPAT = 'compat/qwen-chat';
const TINY = 'embedded/tiny.gguf';
const WEATHER: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
};

let svc: InProcessService;
let fake: openaiFake.OpenAIFake;
let llama: openaiFake.OpenAIFake;
let client: OpenAI;
const ids = requestIds();

before(async () => {
  fake = await openaiFake.start({ flavour: 'compatible', apiKey: KEY });
  fake.setModels([{ id: 'qwen-chat' }, { id: 'gpt-test' }]);
  fake.setOutput({ text: TEXT, chunks: 3, toolCalls: 'none' });
  fake.setUsage({ inputTokens: 31, outputTokens: 7, cachedTokens: 5, reasoningTokens: 0 });
  llama = await openaiFake.start({ flavour: 'llamacpp' });
  llama.setModels([{ id: 'qwen-local' }]);
  llama.setUsage({ inputTokens: 23 });
  const home = tempHome();
  mkdirSync(join(home, 'models'), { recursive: true });
  writeTinyModel(join(home, 'models', 'tiny.gguf'));
  svc = await startInProcess({ home });
  const patched = await svc.request('PATCH', '/v1/settings', {
    body: { runtime: { tuning: { contextSize: 512, threads: 1, parallel: 1 } } },
  });
  assert.equal(patched.status, 200, patched.text);
  await addProvider(svc, { id: 'compat', kind: 'openai_compatible', baseUrl: fake.baseUrl, credential: KEY });
  await addProvider(svc, { id: 'oai', kind: 'openai', baseUrl: fake.baseUrl, credential: KEY });
  await addProvider(svc, { id: 'llama', kind: 'llamacpp', baseUrl: llama.baseUrl });
  client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0, fetch: ids.fetch });
});
after(async () => {
  await svc?.stop();
  await fake?.close();
  await llama?.close();
});

const lastChat = () =>
  fake.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.json as Record<string, any>;

describe('responses over chat: an openai_compatible model', () => {
  test('responses.create answers a response object from a chat completion, metered as the chat usage', async () => {
    const { result, reqId } = await ids.call(() =>
      client.responses.create({ model: COMPAT, instructions: 'Be brief.', input: 'Hi', max_output_tokens: 40 }),
    );
    assert.equal(result.object, 'response');
    assert.equal(result.status, 'completed');
    assert.equal(result.output_text, TEXT);
    assert.deepEqual(result.usage, {
      input_tokens: 31,
      input_tokens_details: { cached_tokens: 5 },
      output_tokens: 7,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 38,
    });
    assert.deepEqual(lastChat().messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
    assert.equal(lastChat().max_tokens, 40);
    const line = await usageLine(svc, reqId);
    assert.deepEqual(
      [
        line.op,
        line.modelId,
        line.outcome,
        line.usage?.inputTokens,
        line.usage?.outputTokens,
        line.usage?.cachedInputTokens,
      ],
      ['responses.create', COMPAT, 'ok', 31, 7, 5],
    );
  });

  test('a streamed response reaches the SDK as Responses events, ending in response.completed with usage', async () => {
    const stream = await client.responses.create({ model: COMPAT, input: 'Hi', stream: true });
    const types: string[] = [];
    let text = '';
    let final: OpenAI.Responses.Response | null = null;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') final = event.response;
    }
    assert.equal(text, TEXT);
    assert.deepEqual(
      [...new Set(types)],
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.equal(final!.usage!.input_tokens, 31);
    assert.deepEqual(lastChat().stream_options, { include_usage: true });
  });

  test(
    'a function tool round trip: the call comes back as a function_call item, its output goes up as a tool ' +
      'message',
    async () => {
      fake.setOutput({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] });
      const first = await client.responses
        .stream({ model: COMPAT, input: 'Weather in Oslo?', tools: [WEATHER] })
        .finalResponse();
      const call = first.output.find((item) => item.type === 'function_call');
      assert.ok(call && call.type === 'function_call');
      assert.deepEqual([call.name, JSON.parse(call.arguments)], ['get_weather', { city: 'Oslo' }]);
      assert.deepEqual(lastChat().tools, [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Current weather',
            parameters: WEATHER.parameters,
            strict: true,
          },
        },
      ]);
      fake.setOutput({ toolCalls: 'none' });
      const second = await client.responses.create({
        model: COMPAT,
        tools: [WEATHER],
        input: [
          { role: 'user', content: 'Weather in Oslo?' },
          call,
          { type: 'function_call_output', call_id: call.call_id, output: '{"temp":4}' },
        ],
      });
      assert.equal(second.output_text, TEXT);
      assert.deepEqual(lastChat().messages.slice(1), [
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: call.arguments } },
          ],
        },
        { role: 'tool', tool_call_id: call.call_id, content: '{"temp":4}' },
      ]);
    },
  );

  test('stored state and malformed tools are refused with a 400 naming the field, nothing sent', async () => {
    const sent = fake.requests.length;
    for (const [extra, param] of [
      [{ store: true }, 'store'],
      [{ previous_response_id: 'resp_1' }, 'previous_response_id'],
      [{ tools: [{ type: 'function' }] }, 'tools[0].name'],
    ] as const) {
      const reply = await svc.request('POST', '/v1/responses', { body: { model: COMPAT, input: 'Hi', ...extra } });
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.json.error.param, param);
    }
    assert.equal(fake.requests.length, sent);
  });
});

describe('responses on the embedded runtime', () => {
  test('responses.create, plain and streamed, through the official client', async () => {
    const plain = await client.responses.create({ model: TINY, input: 'Count.', max_output_tokens: 4, temperature: 0 });
    assert.equal(plain.status, 'incomplete');
    assert.deepEqual(plain.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(plain.usage!.output_tokens, 4);
    const stream = await client.responses.create({
      model: TINY,
      input: 'Count.',
      max_output_tokens: 4,
      temperature: 0,
      stream: true,
    });
    let text = '';
    let last: OpenAI.Responses.ResponseStreamEvent | null = null;
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      last = event;
    }
    assert.equal(last!.type, 'response.incomplete');
    assert.equal(text, plain.output_text);
    assert.deepEqual((last as OpenAI.Responses.ResponseIncompleteEvent).response.usage, plain.usage);
  });

  test(
    'a forced function call comes back as a function_call item; its output goes back in input and the answer is ' +
      'text',
    async () => {
      const CITY: OpenAI.Responses.FunctionTool = {
        ...WEATHER,
        parameters: {
          type: 'object',
          properties: { city: { type: 'string', enum: ['Oslo', 'Lima'] } },
          required: ['city'],
          additionalProperties: false,
        },
      };
      const first = await client.responses.create({
        model: TINY,
        input: 'Weather?',
        tools: [CITY],
        tool_choice: { type: 'function', name: 'get_weather' },
        max_output_tokens: 200,
      });
      assert.equal(first.status, 'completed');
      const call = first.output.find((o) => o.type === 'function_call');
      assert.ok(call?.type === 'function_call' && call.name === 'get_weather', JSON.stringify(first.output));
      assert.ok(['Oslo', 'Lima'].includes(JSON.parse(call.arguments).city), call.arguments);
      assert.ok(first.usage!.output_tokens > 0);
      // Streamed, the same call arrives as argument deltas that add up to the final item's arguments.
      const stream = await client.responses.create({
        model: TINY,
        input: 'Weather?',
        tools: [CITY],
        tool_choice: 'required',
        max_output_tokens: 200,
        stream: true,
      });
      let args = '';
      let done: OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent | null = null;
      for await (const event of stream) {
        if (event.type === 'response.function_call_arguments.delta') args += event.delta;
        if (event.type === 'response.function_call_arguments.done') done = event;
      }
      assert.equal(done?.arguments, args);
      assert.ok(['Oslo', 'Lima'].includes(JSON.parse(args).city), args);
      const second = await client.responses.create({
        model: TINY,
        input: [
          { role: 'user', content: 'Weather?' },
          { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
          { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
        ],
        tools: [CITY],
        tool_choice: 'none',
        max_output_tokens: 4,
      });
      assert.deepEqual(
        second.output.map((o) => o.type),
        ['message'],
      );
      // The call and its output are in the prompt: more than the question alone (tools are not shown under `none`).
      const alone = await client.responses.create({ model: TINY, input: 'Weather?', max_output_tokens: 1 });
      assert.ok(
        second.usage!.input_tokens > alone.usage!.input_tokens,
        `${second.usage!.input_tokens} vs ${alone.usage!.input_tokens}`,
      );
    },
  );
});

describe('token counting for every model', () => {
  const count = (path: string, body: unknown) => svc.request('POST', path, { body });

  test('the embedded runtime counts with its tokenizer exactly what a generation reports as input', async () => {
    const messages = [{ role: 'user', content: 'Count to three.' }];
    const counted = await count('/v1/messages/count_tokens', { model: TINY, system: 'Be brief.', messages });
    assert.equal(counted.status, 200, counted.text);
    assert.equal(counted.headers['x-service-token-count'], 'tokenizer');
    const generated = await count('/v1/messages', { model: TINY, system: 'Be brief.', messages, max_tokens: 1 });
    assert.deepEqual(counted.json, { input_tokens: generated.json.usage.input_tokens });
    const input = await count('/v1/responses/input_tokens', {
      model: TINY,
      instructions: 'Be brief.',
      input: 'Count to three.',
    });
    const answered = await client.responses.create({
      model: TINY,
      instructions: 'Be brief.',
      input: 'Count to three.',
      max_output_tokens: 1,
    });
    assert.deepEqual(input.json, { object: 'response.input_tokens', input_tokens: answered.usage!.input_tokens });
    // Tools count as the generation shows them: a forced call's system turn names them, `none` shows none, and
    // `auto` offers them through the chat template (this template's tool prompt outgrows the tiny context, so
    // that one is compared with the plain count only).
    for (const tool_choice of ['required', 'none'] as const) {
      const counted = await count('/v1/responses/input_tokens', {
        model: TINY,
        input: 'Count to three.',
        tools: [WEATHER],
        tool_choice,
      });
      const generated = await client.responses.create({
        model: TINY,
        input: 'Count to three.',
        tools: [WEATHER],
        tool_choice,
        max_output_tokens: 1,
      });
      assert.equal(counted.json.input_tokens, generated.usage!.input_tokens, tool_choice);
    }
    const offered = await count('/v1/responses/input_tokens', {
      model: TINY,
      input: 'Count to three.',
      tools: [WEATHER],
    });
    const plain = await count('/v1/responses/input_tokens', { model: TINY, input: 'Count to three.' });
    assert.ok(offered.json.input_tokens > plain.json.input_tokens, `${offered.text} vs ${plain.text}`);
  });

  test(
    'a model whose provider counts answers the provider count; one that cannot is estimated from its ' + 'text',
    async () => {
      const provider = await count('/v1/responses/input_tokens', { model: 'oai/gpt-test', input: 'Hi' });
      assert.deepEqual(
        [provider.status, provider.headers['x-service-token-count'], provider.json],
        [200, 'provider', { object: 'response.input_tokens', input_tokens: 31 }],
      );
      // 12 + 4 bytes of text: the estimate is ceil(bytes / 4).
      const estimated = await count('/v1/messages/count_tokens', {
        model: COMPAT,
        system: 'Twelve bytes',
        messages: [{ role: 'user', content: 'four' }],
      });
      assert.deepEqual(
        [estimated.status, estimated.headers['x-service-token-count'], estimated.json],
        [200, 'estimate', { input_tokens: 4 }],
      );
      const input = await count('/v1/responses/input_tokens', {
        model: COMPAT,
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'héllo' }] }],
      });
      assert.deepEqual(
        [input.headers['x-service-token-count'], input.json],
        ['estimate', { object: 'response.input_tokens', input_tokens: 2 }],
      );
    },
  );

  test('llama-server counts a Responses body with its tokenizer, through its styleB count_tokens', async () => {
    const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object' } }];
    const reply = await count('/v1/responses/input_tokens', {
      model: 'llama/qwen-local',
      instructions: 'Be brief.',
      input: 'Hi',
      tools,
    });
    assert.deepEqual(
      [reply.status, reply.headers['x-service-token-count'], reply.json],
      [200, 'tokenizer', { object: 'response.input_tokens', input_tokens: 23 }],
    );
    const sent = llama.requests.at(-1)!;
    assert.equal(sent.path, '/v1/messages/count_tokens');
    assert.deepEqual(sent.json, {
      model: 'qwen-local',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
      system: [{ type: 'text', text: 'Be brief.' }],
      tools: [{ name: 'get_weather', input_schema: { type: 'object' } }],
    });
  });

  test('bad counting bodies are 400 naming the field, never 5xx', async () => {
    const cases: [string, unknown, string][] = [
      ['/v1/messages/count_tokens', { model: COMPAT }, 'messages'],
      [
        '/v1/messages/count_tokens',
        { model: COMPAT, messages: [{ role: 'user', content: 'x' }], tools: 'all' },
        'tools',
      ],
      ['/v1/responses/input_tokens', { model: COMPAT, input: 5 }, 'input'],
      [
        '/v1/responses/input_tokens',
        { model: COMPAT, input: 'x', previous_response_id: 'resp_1' },
        'previous_response_id',
      ],
      ['/v1/messages/count_tokens', { model: TINY, messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].role'],
      ['/v1/responses/input_tokens', { model: TINY, input: 'x', tools: [{ name: 'web_search' }] }, 'tools[0].type'],
      ['/v1/messages/count_tokens', { messages: [] }, 'model'],
    ];
    for (const [path, body, param] of cases) {
      const reply = await count(path, body);
      assert.equal(reply.status, 400, `${path} ${reply.text}`);
      assert.equal(reply.json.error.param, param);
    }
  });
});
