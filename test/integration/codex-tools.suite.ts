import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import type { FakeUsage } from '../fakes/script.ts';
import { codexRequest } from '../helpers/codex.ts';
import { addProvider, distinctUsage, messagesUsage, usageLine } from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import { responsesEvents } from '../helpers/responses-sse.ts';

// Codex CLI 0.171's own requests (recorded; test/fixtures/translate/codex/) through the service to an
// Anthropic-style model and to a chat-completions model: nothing refused, every tool type translated, a call of
// a namespaced tool seen by the client as OpenAI's API returns it and sent back as the upstream's own call,
// Anthropic's web search as web_search_call items, the tools left out named in `switchyard-omitted-tools` and
// in the log, and the usage exactly the upstream's.

type Json = Record<string, any>;

const CLAUDE = 'anth/claude-x';
const QWEN = 'compat/qwen-chat';
const HEADER = 'switchyard-omitted-tools';
const SPAWN = { name: 'multi_agent_v1__spawn_agent', arguments: { message: 'Count the files.' } };
const THINKING = { text: 'A sub-agent can count them.', signature: 'RXNpZ25lZCB0aGlua2luZw==' };

let svc: InProcessService;
let an: anthropicFake.AnthropicFake;
let chat: openaiFake.OpenAIFake;

before(async () => {
  [an, chat, svc] = await Promise.all([
    anthropicFake.start({ apiKey: 'fake-anthropic-key' }),
    openaiFake.start({ flavour: 'compatible', apiKey: 'fake-compat-key' }),
    startInProcess(),
  ]);
  an.setModels([{ id: 'claude-x' }]);
  chat.setModels([{ id: 'qwen-chat' }]);
  await addProvider(svc, { id: 'anth', kind: 'anthropic', baseUrl: an.baseUrl, credential: 'fake-anthropic-key' });
  await addProvider(svc, {
    id: 'compat',
    kind: 'openai_compatible',
    baseUrl: chat.baseUrl,
    credential: 'fake-compat-key',
  });
});
after(async () => {
  await svc?.stop();
  await an?.close();
  await chat?.close();
});

/** A recorded Codex turn sent as Codex sends it (its headers, its body), to `model`. */
async function codex(turn: 1 | 2, model: string, change: (body: Json) => Json = (b) => b) {
  const recorded = codexRequest(turn);
  const reply = await svc.request('POST', '/v1/responses', {
    headers: recorded.headers,
    body: change({ ...recorded.body, model }),
  });
  assert.equal(reply.status, 200, reply.text);
  return {
    reply,
    reqId: reply.headers['x-service-request-id']!,
    events: reply.json === undefined ? responsesEvents(reply.text) : [],
  };
}

const lastMessages = () => an.requests.filter((r) => r.path === '/v1/messages').at(-1)!.json as Json;
const lastChat = () => chat.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.json as Json;
const cacheMarks = (body: unknown) => JSON.stringify(body).split('"cache_control"').length - 1;

/** The Responses usage of a Messages upstream's figures: every input token, cache reads and writes apart. */
function responsesUsage(u: FakeUsage): Json {
  const input = u.inputTokens + u.cacheCreationTokens + u.cachedTokens;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u.cachedTokens, cache_write_tokens: u.cacheCreationTokens },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + u.outputTokens,
  };
}

describe('codex over an Anthropic-style model', () => {
  test(
    'a namespaced call round trip: the client sees it in its namespace, sends it back with its output, and the ' +
      'model sees its flattened name; thinking and usage exact both ways',
    async () => {
      const u1 = distinctUsage(41);
      an.setUsage(u1);
      an.setOutput({ text: '', toolCalls: [SPAWN], thinking: THINKING, webSearch: null, argumentChunks: 3 });
      const first = await codex(1, CLAUDE);
      assert.equal(first.reply.headers[HEADER], undefined, 'Anthropic runs the web search: nothing is left out');
      const sent = lastMessages();
      assert.deepEqual(
        sent.tools.map((t: Json) => t.name).filter((n: string) => n.startsWith('multi_agent_v1')),
        [
          'multi_agent_v1__close_agent',
          'multi_agent_v1__resume_agent',
          'multi_agent_v1__send_input',
          'multi_agent_v1__spawn_agent',
          'multi_agent_v1__wait_agent',
        ],
      );
      assert.deepEqual(sent.tools.at(-1), {
        type: 'web_search_20250305',
        name: 'web_search',
        cache_control: { type: 'ephemeral' },
      });
      assert.deepEqual(sent.thinking, { type: 'enabled', budget_tokens: 8192, display: 'summarized' });
      assert.equal(cacheMarks(sent), 3);

      const done = first.events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item);
      assert.deepEqual(
        done.map((i: Json) => i.type),
        ['reasoning', 'function_call'],
      );
      const [reasoning, call] = done as [Json, Json];
      assert.deepEqual(
        [call.namespace, call.name, JSON.parse(call.arguments), call.status],
        ['multi_agent_v1', 'spawn_agent', SPAWN.arguments, 'completed'],
      );
      assert.deepEqual([reasoning.summary[0].text, reasoning.encrypted_content], [THINKING.text, THINKING.signature]);
      const completed = first.events.at(-1)!;
      assert.equal(completed.type, 'response.completed');
      assert.deepEqual(completed.response.usage, responsesUsage(u1));
      assert.deepEqual(
        (await usageLine(svc, first.reqId)).usage,
        messagesUsage(u1, {
          cacheCounters: true,
          toolCalls: { multi_agent_v1__spawn_agent: 1 },
        }),
      );

      // Codex sends the items back (without their ids) with the call's output, this time asking for no stream.
      const u2 = distinctUsage(42);
      an.setUsage(u2);
      an.setOutput({ text: 'Three files.', toolCalls: 'none', thinking: null });
      const items = done.map(({ id: _id, ...item }: Json) => item);
      const output = { type: 'function_call_output', call_id: call.call_id, output: '{"agent_id":"agent-1"}' };
      const second = await codex(1, CLAUDE, (b) => ({ ...b, stream: false, input: [...b.input, ...items, output] }));
      assert.equal(second.reply.json.output_text ?? second.reply.json.output.at(-1).content[0].text, 'Three files.');
      assert.deepEqual(second.reply.json.usage, responsesUsage(u2));
      const messages = lastMessages().messages as Json[];
      assert.deepEqual(messages.at(-2), {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: THINKING.text, signature: THINKING.signature },
          { type: 'tool_use', id: call.call_id, name: 'multi_agent_v1__spawn_agent', input: SPAWN.arguments },
        ],
      });
      assert.deepEqual(messages.at(-1), {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: call.call_id,
            content: output.output,
            cache_control: { type: 'ephemeral' },
          },
        ],
      });
      assert.deepEqual((await usageLine(svc, second.reqId)).usage, messagesUsage(u2, { cacheCounters: true }));
    },
  );

  test("Anthropic's web search comes back as a web_search_call item with its sources, streamed and whole", async () => {
    const u = distinctUsage(43);
    an.setUsage(u);
    an.setOutput({
      text: 'Switchyard is a gateway.',
      toolCalls: 'none',
      thinking: null,
      webSearch: { query: 'switchyard gateway', results: [{ url: 'https://example.com/s', title: 'S' }] },
    });
    const action = {
      type: 'search',
      query: 'switchyard gateway',
      sources: [{ type: 'url', url: 'https://example.com/s' }],
    };
    const streamed = await codex(1, CLAUDE);
    const types = streamed.events.map((e) => e.type);
    for (const type of [
      'response.web_search_call.in_progress',
      'response.web_search_call.searching',
      'response.web_search_call.completed',
    ])
      assert.ok(types.includes(type), type);
    const output = streamed.events.at(-1)!.response.output as Json[];
    assert.deepEqual(
      output.map((i) => [i.type, i.status]),
      [
        ['web_search_call', 'completed'],
        ['message', 'completed'],
      ],
    );
    assert.deepEqual([output[0]!.action, output[1]!.content[0].text], [action, 'Switchyard is a gateway.']);
    assert.deepEqual(streamed.events.at(-1)!.response.usage, responsesUsage(u));
    const whole = await codex(1, CLAUDE, (b) => ({ ...b, stream: false }));
    assert.deepEqual(whole.reply.json.output[0].action, action);
    assert.deepEqual(
      (await usageLine(svc, whole.reqId)).usage,
      messagesUsage(u, { cacheCounters: true, toolCalls: { web_search: 1 } }),
    );
    an.setOutput({ webSearch: null });
  });

  test('built-in tools Anthropic cannot run are left out, named in the header and the log; served', async () => {
    an.setOutput({ text: 'Fine.', toolCalls: 'none' });
    const extra = (b: Json) => ({
      ...b,
      stream: false,
      tools: [
        ...b.tools,
        { type: 'file_search', vector_store_ids: ['vs_1'] },
        { type: 'mcp', server_label: 'x', server_url: 'https://mcp.example' },
      ],
      tool_choice: { type: 'file_search' },
    });
    const { reply, reqId } = await codex(1, CLAUDE, extra);
    assert.equal(reply.headers[HEADER], 'file_search,mcp');
    assert.equal(reply.json.output[0].content[0].text, 'Fine.');
    assert.deepEqual(lastMessages().tool_choice, { type: 'auto' });
    const line = await svc.waitForLog((l) => l.reqId === reqId && Array.isArray(l.omittedTools));
    assert.deepEqual([line.level, line.omittedTools], [40, ['file_search', 'mcp']]);
    assert.ok(!JSON.stringify(line).includes('vs_1') && !JSON.stringify(line).includes('mcp.example'));
  });
});

describe('codex over a chat-completions model', () => {
  test(
    'web search is left out and named on the streamed and the whole answer; a namespaced call round trip with ' +
      'exact usage',
    async () => {
      const u = { inputTokens: 120, outputTokens: 9, cachedTokens: 30, reasoningTokens: 0 };
      chat.setUsage(u);
      chat.setOutput({ text: '', toolCalls: [SPAWN], argumentChunks: 3 });
      const first = await codex(1, QWEN);
      assert.equal(first.reply.headers[HEADER], 'web_search');
      const line = await svc.waitForLog((l) => l.reqId === first.reqId && Array.isArray(l.omittedTools));
      assert.deepEqual(line.omittedTools, ['web_search']);
      const sent = lastChat();
      assert.ok(sent.tools.some((t: Json) => t.function.name === 'multi_agent_v1__spawn_agent'));
      assert.equal(sent.tools.length, 12);
      const call = first.events.filter((e) => e.type === 'response.output_item.done').at(-1)!.item as Json;
      assert.deepEqual(
        [call.type, call.namespace, call.name, JSON.parse(call.arguments)],
        ['function_call', 'multi_agent_v1', 'spawn_agent', SPAWN.arguments],
      );
      const usage = {
        input_tokens: 120,
        input_tokens_details: { cached_tokens: 30 },
        output_tokens: 9,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 129,
      };
      assert.deepEqual(first.events.at(-1)!.response.usage, usage);

      chat.setOutput({ text: 'Three files.', toolCalls: 'none' });
      const { id: _id, ...item } = call;
      const output = { type: 'function_call_output', call_id: call.call_id, output: 'agent-1' };
      const second = await codex(1, QWEN, (b) => ({ ...b, stream: false, input: [...b.input, item, output] }));
      assert.equal(second.reply.headers[HEADER], 'web_search');
      assert.deepEqual(second.reply.json.usage, usage);
      const messages = lastChat().messages as Json[];
      assert.equal(messages.at(-2)!.tool_calls[0].function.name, 'multi_agent_v1__spawn_agent');
      assert.deepEqual(messages.at(-1), { role: 'tool', tool_call_id: call.call_id, content: 'agent-1' });
      const metered = await usageLine(svc, second.reqId);
      assert.deepEqual(
        [metered.usage?.inputTokens, metered.usage?.outputTokens, metered.usage?.cachedInputTokens],
        [120, 9, 30],
      );
    },
  );

  test('turn 2 as recorded: the call and its output reach the chat model as a tool call and message', async () => {
    chat.setOutput({ text: 'hi', toolCalls: 'none' });
    const { events } = await codex(2, QWEN);
    assert.equal(events.at(-1)!.type, 'response.completed');
    assert.deepEqual(
      lastChat()
        .messages.slice(-2)
        .map((m: Json) => m.role),
      ['assistant', 'tool'],
    );
  });
});
