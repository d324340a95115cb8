import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TRANSLATORS, type RequestState, type TranslateContext } from '../../../workers/translate/index.ts';
import { responsesEvents as events } from '../../helpers/responses-sse.ts';
import { codexTurn } from '../../helpers/codex.ts';

// Codex CLI 0.171's own requests (recorded, test/fixtures/translate/codex/) over chat completions: its function
// tools and its namespace's tools as chat functions, its web search left out and named, custom tools as
// functions of one string; calls answered as OpenAI's API answers them and handed back as chat tool calls.

type Json = Record<string, any>;

const translator = TRANSLATORS['styleA.responses<-styleA.chat_completions'];
const ctx: TranslateContext = {
  upstreamModelId: 'qwen',
  providerKind: 'openai_compatible',
  clientModel: 'compat/qwen',
  streamUsage: true,
  now: () => 1_700_000_000,
};

const chunk = (delta: Json, finish: string | null = null) =>
  `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}`;

/** A chat stream of these tool calls, each name first and its arguments in two pieces. */
function streamed(state: RequestState, calls: { id: string; name: string; args: string }[]): Json[] {
  const mapper = translator.stream(ctx, state);
  const data = calls.flatMap((c, index) => [
    chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }),
    chunk({ tool_calls: [{ index, function: { arguments: c.args.slice(0, 5) } }] }),
    chunk({ tool_calls: [{ index, function: { arguments: c.args.slice(5) } }] }),
  ]);
  data.push(chunk({}, 'tool_calls'), 'data: [DONE]');
  let text = '';
  for (const line of data) text += mapper.push({ event: null, data: line.slice(6), raw: line });
  return events(text + mapper.end());
}

describe('responses over chat: what Codex sends', () => {
  test('turn 1: every function tool and the namespace flattened as chat functions; web search left out, named', () => {
    const body = codexTurn(1);
    const { body: sent, state } = translator.request(structuredClone(body), ctx);
    const tools = sent.tools as Json[];
    assert.deepEqual(
      tools.map((t) => t.function.name),
      [
        'exec_command',
        'write_stdin',
        'request_user_input',
        'view_image',
        'multi_agent_v1__close_agent',
        'multi_agent_v1__resume_agent',
        'multi_agent_v1__send_input',
        'multi_agent_v1__spawn_agent',
        'multi_agent_v1__wait_agent',
        'get_goal',
        'create_goal',
        'update_goal',
      ],
    );
    assert.deepEqual(tools[0], {
      type: 'function',
      function: {
        name: 'exec_command',
        description: body.tools[0].description,
        parameters: body.tools[0].parameters,
        strict: false,
      },
    });
    assert.deepEqual(
      [sent.tool_choice, sent.parallel_tool_calls, sent.stream, sent.stream_options],
      ['auto', true, true, { include_usage: true }],
    );
    assert.deepEqual(state.omittedTools, ['web_search']);
    for (const key of ['client_metadata', 'prompt_cache_key', 'include', 'store', 'reasoning'])
      assert.equal(key in sent, false, key);
    assert.deepEqual(body, codexTurn(1), 'the client body is not changed in place');
  });

  test("turn 2's function call and output are the assistant tool call and the tool message", () => {
    const { body: sent } = translator.request(codexTurn(2), ctx);
    assert.deepEqual((sent.messages as Json[]).slice(-2), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'exec_command', arguments: '{"cmd":"echo hi"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: codexTurn(2).input.at(-1).output },
    ]);
  });

  test('a namespaced call comes back in its namespace, whole and streamed, and goes up again flattened', () => {
    const { state } = translator.request(codexTurn(1), ctx);
    const answer = translator.response(
      {
        choices: [
          {
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  id: 'call_7',
                  type: 'function',
                  function: { name: 'multi_agent_v1__wait_agent', arguments: '{"targets":["a1"]}' },
                },
              ],
            },
            finish_reason: 'tool_calls',
          },
        ],
        usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 },
      },
      ctx,
      state,
    ) as Json;
    const { id, ...item } = answer.output[0];
    assert.match(id, /^fc_/);
    assert.deepEqual(item, {
      type: 'function_call',
      call_id: 'call_7',
      namespace: 'multi_agent_v1',
      name: 'wait_agent',
      arguments: '{"targets":["a1"]}',
      status: 'completed',
    });
    const list = streamed(state, [{ id: 'call_7', name: 'multi_agent_v1__wait_agent', args: '{"targets":["a1"]}' }]);
    const added = list.find((e) => e.type === 'response.output_item.added')!;
    const done = list.find((e) => e.type === 'response.output_item.done')!;
    assert.deepEqual([added.item.namespace, added.item.name], ['multi_agent_v1', 'wait_agent']);
    assert.deepEqual({ ...done.item, id: undefined }, { ...item, id: undefined });
    assert.equal(list.find((e) => e.type === 'response.function_call_arguments.done')!.name, 'wait_agent');

    const { body: next } = translator.request(
      {
        ...codexTurn(1),
        input: [...codexTurn(1).input, item, { type: 'function_call_output', call_id: 'call_7', output: 'done' }],
      },
      ctx,
    );
    assert.equal((next.messages as Json[]).at(-2)!.tool_calls[0].function.name, 'multi_agent_v1__wait_agent');
  });

  test('a custom tool: a function of one string up, custom_tool_call items and input events down, and back', () => {
    const request = { model: 'm', input: 'Fix it', tools: [{ type: 'custom', name: 'apply_patch' }], stream: true };
    const { body: sent, state } = translator.request(request, ctx);
    assert.deepEqual((sent.tools as Json[])[0]!.function.parameters.required, ['input']);
    const list = streamed(state, [{ id: 'call_8', name: 'apply_patch', args: '{"input":"*** Begin Patch"}' }]);
    assert.deepEqual(list.map((e) => e.type).slice(2), [
      'response.output_item.added',
      'response.custom_tool_call_input.delta',
      'response.custom_tool_call_input.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const done = list.at(-2)!.item;
    assert.deepEqual(
      [done.type, done.name, done.input, done.call_id],
      ['custom_tool_call', 'apply_patch', '*** Begin Patch', 'call_8'],
    );
    const { body: next } = translator.request(
      {
        ...request,
        input: [
          { role: 'user', content: 'Fix it' },
          done,
          { type: 'custom_tool_call_output', call_id: 'call_8', output: 'Done.' },
        ],
      },
      ctx,
    );
    assert.deepEqual((next.messages as Json[]).slice(1), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_8',
            type: 'function',
            function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_8', content: 'Done.' },
    ]);
  });

  test('a web_search_call item handed back is dropped; a tool_choice of a left-out tool is not sent', () => {
    const { body: sent } = translator.request(
      {
        model: 'm',
        input: [
          { role: 'user', content: 'Search.' },
          { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } },
          { role: 'assistant', content: [{ type: 'output_text', text: 'Found.' }] },
        ],
        tools: [{ type: 'web_search' }],
        tool_choice: 'required',
      },
      ctx,
    );
    assert.deepEqual(sent.messages, [
      { role: 'user', content: 'Search.' },
      { role: 'assistant', content: 'Found.' },
    ]);
    assert.deepEqual(['tools' in sent, 'tool_choice' in sent], [false, false]);
  });
});
