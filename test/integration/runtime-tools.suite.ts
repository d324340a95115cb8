import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { writeTinyModel } from '../helpers/gguf.ts';
import { tempHome } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Tools on the embedded runtime, through the official clients' tool runners. The model is a tiny GGUF with
// random weights: what makes its calls valid is the grammar a forced tool choice generates under, so every
// call here is checked against its tool's schema, and the conversation the runner sends back (the call and
// its result) must be taken by the runtime's chat template for the runner to finish.

const MODEL = 'embedded/tiny';
const CITY = {
  type: 'object',
  properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] } },
  required: ['city'],
  additionalProperties: false,
};
const UNIT = {
  type: 'object',
  properties: { unit: { type: 'string', enum: ['c', 'f'] }, exact: { type: 'boolean' } },
  required: ['unit', 'exact'],
};

let svc: InProcessService;
let openai: OpenAI;
let anthropic: Anthropic;

before(async () => {
  const home = tempHome();
  mkdirSync(join(home, 'models'), { recursive: true });
  writeTinyModel(join(home, 'models', 'tiny.gguf'));
  svc = await startInProcess({ home });
  openai = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: svc.url, apiKey: svc.adminToken, maxRetries: 0 });
});
after(async () => {
  await svc?.stop();
});

const validCity = (args: unknown) =>
  assert.ok(['Paris', 'Oslo', 'Lima'].includes((args as { city?: string }).city ?? ''), JSON.stringify(args));

describe('styleA tools on the embedded runtime', () => {
  test(
    'runTools with a forced function: the function runs with schema-valid arguments and the runner ' + 'finishes',
    async () => {
      const seen: unknown[] = [];
      const runner = openai.chat.completions.runTools({
        model: MODEL,
        max_tokens: 400,
        messages: [{ role: 'user', content: 'Weather in a city?' }],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              description: 'Weather in a city',
              parameters: CITY,
              function: (args: unknown) => (seen.push(args), 'sunny'),
              parse: JSON.parse,
            },
          },
        ],
      });
      const final = await runner.finalChatCompletion();
      assert.equal(seen.length, 1);
      validCity(seen[0]);
      const messages = runner.messages;
      assert.deepEqual(
        messages.map((m) => m.role),
        ['user', 'assistant', 'tool'],
      );
      assert.equal(final.choices[0]?.finish_reason, 'tool_calls');
    },
  );

  test(
    'tool_choice required picks one of several tools; the result goes back and the next answer is ' + 'text',
    async () => {
      const first = await openai.chat.completions.create({
        model: MODEL,
        max_tokens: 400,
        messages: [{ role: 'user', content: 'Pick a tool.' }],
        tool_choice: 'required',
        tools: [
          { type: 'function', function: { name: 'get_weather', parameters: CITY } },
          { type: 'function', function: { name: 'set_unit', parameters: UNIT } },
        ],
      });
      const call = first.choices[0]?.message.tool_calls?.[0];
      assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
      assert.equal(first.choices[0]?.message.content, null);
      assert.ok(call?.type === 'function' && call.id.startsWith('call_'));
      const args = JSON.parse(call.function.arguments);
      if (call.function.name === 'get_weather') validCity(args);
      else
        assert.ok(
          call.function.name === 'set_unit' && ['c', 'f'].includes(args.unit) && typeof args.exact === 'boolean',
          call.function.arguments,
        );
      const second = await openai.chat.completions.create({
        model: MODEL,
        max_tokens: 8,
        messages: [
          { role: 'user', content: 'Pick a tool.' },
          first.choices[0]!.message,
          { role: 'tool', tool_call_id: call.id, content: 'done' },
        ],
        tool_choice: 'none',
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: CITY } }],
      });
      assert.equal(second.choices[0]?.message.tool_calls, undefined);
      assert.equal(typeof second.choices[0]?.message.content, 'string');
    },
  );

  test('a streamed forced call arrives as one tool_calls delta the client assembles', async () => {
    const stream = openai.chat.completions.stream({
      model: MODEL,
      max_tokens: 400,
      messages: [{ role: 'user', content: 'Weather?' }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: CITY } }],
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();
    const call = final.choices[0]?.message.tool_calls?.[0];
    assert.equal(final.choices[0]?.finish_reason, 'tool_calls');
    assert.ok(call?.type === 'function' && call.function.name === 'get_weather');
    validCity(JSON.parse(call.function.arguments));
    assert.ok((final.usage?.completion_tokens ?? 0) > 0);
  });

  test(
    'tool_choice auto offers the tools through the chat template and the model decides: text or a valid ' + 'call',
    async () => {
      const reply = await openai.chat.completions.create({
        model: MODEL,
        max_tokens: 24,
        messages: [{ role: 'user', content: 'Weather?' }],
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: CITY } }],
      });
      const choice = reply.choices[0]!;
      if (choice.finish_reason === 'tool_calls') {
        const call = choice.message.tool_calls?.[0];
        assert.ok(call?.type === 'function' && call.function.name === 'get_weather');
        validCity(JSON.parse(call.function.arguments));
      } else
        assert.ok(
          ['stop', 'length'].includes(choice.finish_reason) && typeof choice.message.content === 'string',
          JSON.stringify(choice),
        );
    },
  );

  test('bad tools are 400 naming the member, before anything is generated', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ tools: [{ type: 'function', function: { name: 'bad name!' } }] }, 'tools[0].function.name'],
      [
        { tools: [{ type: 'function', function: { name: 'f', parameters: { $ref: '#/x' } } }] },
        'tools[0].function.parameters',
      ],
      [
        {
          tools: [{ type: 'function', function: { name: 'f' } }],
          tool_choice: { type: 'function', function: { name: 'g' } },
        },
        'tool_choice',
      ],
      [{ tools: 'nope' }, 'tools'],
      [{ tools: [{ type: 'web_search' }] }, 'tools[0]'],
    ];
    for (const [extra, param] of cases) {
      const reply = await svc.request('POST', '/v1/chat/completions', {
        body: { model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'x' }], ...extra },
      });
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.json.error.param, param, reply.text);
    }
  });
});

describe('styleB tools on the embedded runtime', () => {
  test('the toolRunner with tool_choice tool runs the tool with schema-valid input and finishes', async () => {
    const seen: unknown[] = [];
    const runner = anthropic.beta.messages.toolRunner({
      model: MODEL,
      max_tokens: 400,
      max_iterations: 2,
      messages: [{ role: 'user', content: 'Weather in a city?' }],
      tool_choice: { type: 'tool', name: 'get_weather' },
      tools: [
        {
          type: 'custom',
          name: 'get_weather',
          input_schema: CITY as Anthropic.Beta.BetaTool.InputSchema,
          run: (input: unknown) => (seen.push(input), 'sunny'),
        },
      ],
    });
    const final = await runner.runUntilDone();
    assert.ok(seen.length >= 1);
    for (const input of seen) validCity(input);
    assert.equal(final.role, 'assistant');
  });

  test('count_tokens counts the tools a generation documents: equal to its input_tokens, auto and forced', async () => {
    const tools = [
      { name: 'get_weather', description: 'Weather in a city', input_schema: CITY as Anthropic.Tool.InputSchema },
    ];
    const plain = await anthropic.messages.countTokens({
      model: MODEL,
      messages: [{ role: 'user', content: 'Weather?' }],
    });
    // Both ways show the model the tools: through the chat template (auto), or a system turn (forced).
    for (const tool_choice of [{ type: 'auto' as const }, { type: 'tool' as const, name: 'get_weather' }]) {
      const body = { model: MODEL, messages: [{ role: 'user' as const, content: 'Weather?' }], tools, tool_choice };
      const counted = await anthropic.messages.countTokens(body);
      const generated = await anthropic.messages.create({ ...body, max_tokens: 400 });
      assert.equal(counted.input_tokens, generated.usage.input_tokens, tool_choice.type);
      assert.ok(
        counted.input_tokens > plain.input_tokens,
        `${tool_choice.type}: ${counted.input_tokens} > ${plain.input_tokens}`,
      );
    }
  });

  test('messages.stream().finalMessage() assembles a forced tool_use block from input_json_delta events', async () => {
    const message = await anthropic.messages
      .stream({
        model: MODEL,
        max_tokens: 400,
        messages: [{ role: 'user', content: 'Weather?' }],
        tool_choice: { type: 'any' },
        tools: [{ name: 'get_weather', input_schema: CITY as Anthropic.Tool.InputSchema }],
      })
      .finalMessage();
    assert.equal(message.stop_reason, 'tool_use');
    const use = message.content.find((b) => b.type === 'tool_use');
    assert.ok(use?.type === 'tool_use' && use.id.startsWith('toolu_') && use.name === 'get_weather');
    validCity(use.input);
    assert.ok(message.usage.output_tokens > 0);
  });
});
