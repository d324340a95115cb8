import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TRANSLATORS, type RequestState, type TranslateContext } from '../../../workers/translate/index.ts';
import { responsesEvents as events } from '../../helpers/responses-sse.ts';
import { codexTurn } from '../../helpers/codex.ts';

// Codex CLI 0.171's own requests (recorded, test/fixtures/translate/codex/) over the Messages API: every tool
// type it sends, answered as OpenAI's API answers (a namespaced function call with its `namespace`, custom
// tool calls, web_search_call items), handed back in the next turn as the upstream's own calls; its reasoning
// summary and prompt cache key as thinking and cache breakpoints.

type Json = Record<string, any>;

const translator = TRANSLATORS['styleA.responses<-styleB.messages'];
const context = (providerKind: TranslateContext['providerKind']): TranslateContext => ({
  upstreamModelId: 'claude-x',
  providerKind,
  clientModel: 'anthropic/claude-x',
  streamUsage: false,
  now: () => 1_700_000_000,
});
const ANTHROPIC = context('anthropic');

const sse = (type: string, fields: Json = {}) => ({ event: type, data: JSON.stringify({ type, ...fields }), raw: '' });

/** A Messages answer as its stream: each block started (a tool's input as one JSON delta), in order. */
function streamOf(content: Json[], stop: string): ReturnType<typeof sse>[] {
  const out = [sse('message_start', { message: { usage: { input_tokens: 10, output_tokens: 1 } } })];
  content.forEach((block, index) => {
    if (block.type === 'tool_use' || block.type === 'server_tool_use') {
      out.push(sse('content_block_start', { index, content_block: { ...block, input: {} } }));
      out.push(
        sse('content_block_delta', {
          index,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
        }),
      );
    } else if (block.type === 'text') {
      out.push(sse('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      out.push(sse('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } }));
    } else out.push(sse('content_block_start', { index, content_block: block }));
    out.push(sse('content_block_stop', { index }));
  });
  out.push(sse('message_delta', { delta: { stop_reason: stop }, usage: { output_tokens: 7 } }));
  out.push(sse('message_stop'));
  return out;
}

function streamed(state: RequestState, content: Json[], stop = 'tool_use'): Json[] {
  const mapper = translator.stream(ANTHROPIC, state);
  let text = '';
  for (const e of streamOf(content, stop)) text += mapper.push(e);
  return events(text + mapper.end());
}

const cacheMarks = (body: unknown) => JSON.stringify(body).split('"cache_control"').length - 1;

describe('responses over messages: what Codex sends', () => {
  test(
    "turn 1 goes upstream whole: every function tool, the namespace's tools flattened, Anthropic's web search, " +
      'thinking for the summary, three cache breakpoints; nothing refused',
    () => {
      const body = codexTurn(1);
      const { body: sent, state } = translator.request(structuredClone(body), ANTHROPIC);
      assert.deepEqual(
        (sent.tools as Json[]).map((t) => t.name),
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
          'web_search',
        ],
      );
      const exec = body.tools[0];
      assert.deepEqual((sent.tools as Json[])[0], {
        name: 'exec_command',
        description: exec.description,
        input_schema: exec.parameters,
      });
      assert.deepEqual((sent.tools as Json[]).at(-1), {
        type: 'web_search_20250305',
        name: 'web_search',
        cache_control: { type: 'ephemeral' },
      });
      assert.deepEqual(
        [sent.tool_choice, sent.thinking, sent.max_tokens, sent.stream],
        [{ type: 'auto' }, { type: 'enabled', budget_tokens: 8192, display: 'summarized' }, 12_288, true],
      );
      // Both developer messages are the system prompt; the last one carries the breakpoint.
      const system = sent.system as Json[];
      assert.deepEqual(
        system.map((b) => [b.text, b.cache_control]),
        [
          [body.input[0].content[0].text, undefined],
          [`${body.input[1].content[0].text}${body.input[1].content[1].text}`, { type: 'ephemeral' }],
        ],
      );
      const messages = sent.messages as Json[];
      assert.deepEqual(
        messages.map((m) => [m.role, m.content.length]),
        [['user', 2]],
      );
      assert.deepEqual(messages[0]!.content[1], {
        type: 'text',
        text: 'Run echo hi',
        cache_control: { type: 'ephemeral' },
      });
      assert.equal(cacheMarks(sent), 3);
      for (const key of ['client_metadata', 'prompt_cache_key', 'include', 'store', 'parallel_tool_calls', 'reasoning'])
        assert.equal(key in sent, false, key);
      assert.deepEqual(state.omittedTools, []);
      assert.deepEqual(body, codexTurn(1), 'the client body is not changed in place');
    },
  );

  test('over a Messages server that is not Anthropic, web search is left out and named, no display asked', () => {
    const { body: sent, state } = translator.request(codexTurn(1), context('llamacpp'));
    assert.equal((sent.tools as Json[]).length, 12);
    assert.ok(!(sent.tools as Json[]).some((t) => t.name === 'web_search' || t.type !== undefined));
    assert.deepEqual(sent.thinking, { type: 'enabled', budget_tokens: 8192 });
    assert.deepEqual(state.omittedTools, ['web_search']);
    assert.equal(cacheMarks(sent), 3);
  });

  test("turn 2's function call and output become the tool_use and tool_result, the breakpoint on the result", () => {
    const { body: sent } = translator.request(codexTurn(2), ANTHROPIC);
    const messages = sent.messages as Json[];
    assert.deepEqual(messages.slice(-2), [
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_1', name: 'exec_command', input: { cmd: 'echo hi' } }],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'call_1',
            content: codexTurn(2).input.at(-1).output,
            cache_control: { type: 'ephemeral' },
          },
        ],
      },
    ]);
    assert.equal(cacheMarks(sent), 3);
  });
});

describe('responses over messages: a namespaced call, as OpenAI returns it, and back', () => {
  const call = { type: 'tool_use', id: 'toolu_1', name: 'multi_agent_v1__spawn_agent', input: { message: 'go' } };
  const expected = {
    type: 'function_call',
    call_id: 'toolu_1',
    namespace: 'multi_agent_v1',
    name: 'spawn_agent',
    arguments: '{"message":"go"}',
    status: 'completed',
  };

  test('the whole answer and the stream name the tool in its namespace', () => {
    const { state } = translator.request(codexTurn(1), ANTHROPIC);
    const answer = translator.response(
      { content: [call], stop_reason: 'tool_use', usage: { input_tokens: 10, output_tokens: 7 } },
      ANTHROPIC,
      state,
    ) as Json;
    const { id, ...item } = answer.output[0];
    assert.match(id, /^fc_/);
    assert.deepEqual(item, expected);

    const list = streamed(state, [call]);
    const added = list.find((e) => e.type === 'response.output_item.added')!;
    assert.deepEqual(
      [added.item.namespace, added.item.name, added.item.status],
      ['multi_agent_v1', 'spawn_agent', 'in_progress'],
    );
    const argsDone = list.find((e) => e.type === 'response.function_call_arguments.done')!;
    assert.deepEqual([argsDone.name, argsDone.arguments], ['spawn_agent', '{"message":"go"}']);
    const done = list.find((e) => e.type === 'response.output_item.done')!;
    assert.deepEqual({ ...done.item, id: undefined }, { ...expected, id: undefined });
    assert.deepEqual(list.at(-1)!.response.output[0].namespace, 'multi_agent_v1');
  });

  test('handed back with its output, the call goes up under its flattened name', () => {
    const history = [
      ...codexTurn(1).input,
      { ...expected, id: 'fc_9' },
      { type: 'function_call_output', call_id: 'toolu_1', output: '{"agent_id":"a1"}' },
    ];
    const { body: sent } = translator.request({ ...codexTurn(1), input: history }, ANTHROPIC);
    const messages = sent.messages as Json[];
    assert.deepEqual(messages.at(-2), { role: 'assistant', content: [{ ...call }] });
    assert.deepEqual(messages.at(-1)!.content[0].tool_use_id, 'toolu_1');
  });
});

describe('responses over messages: custom tools', () => {
  const PATCH = { type: 'custom', name: 'apply_patch', description: 'Edit files.', format: { type: 'text' } };
  const request = { model: 'm', input: 'Fix it', tools: [PATCH] };
  const call = { type: 'tool_use', id: 'toolu_2', name: 'apply_patch', input: { input: '*** Begin Patch\n' } };

  test('go up as a function of one string, and come back as custom_tool_call items with their input', () => {
    const { body: sent, state } = translator.request(request, ANTHROPIC);
    assert.deepEqual((sent.tools as Json[])[0]!.input_schema.required, ['input']);
    const answer = translator.response(
      { content: [call], stop_reason: 'tool_use', usage: {} },
      ANTHROPIC,
      state,
    ) as Json;
    const { id, ...item } = answer.output[0];
    assert.match(id, /^ctc_/);
    assert.deepEqual(item, {
      type: 'custom_tool_call',
      call_id: 'toolu_2',
      name: 'apply_patch',
      input: '*** Begin Patch\n',
      status: 'completed',
    });
  });

  test('stream their input as custom_tool_call_input events, whole at the end of the call', () => {
    const { state } = translator.request(request, ANTHROPIC);
    const list = streamed(state, [call]);
    assert.deepEqual(
      list.map((e) => e.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.custom_tool_call_input.delta',
        'response.custom_tool_call_input.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.deepEqual([list[3]!.delta, list[4]!.input, list[5]!.item.input], Array(3).fill('*** Begin Patch\n'));
    assert.equal(list[2]!.item.type, 'custom_tool_call');
  });

  test('handed back, a custom tool call and its output are the tool_use and tool_result they were', () => {
    const { body: sent } = translator.request(
      {
        ...request,
        input: [
          { role: 'user', content: 'Fix it' },
          {
            type: 'custom_tool_call',
            id: 'ctc_1',
            call_id: 'toolu_2',
            name: 'apply_patch',
            input: '*** Begin Patch\n',
          },
          { type: 'custom_tool_call_output', call_id: 'toolu_2', output: 'Done.' },
        ],
      },
      ANTHROPIC,
    );
    assert.deepEqual((sent.messages as Json[]).slice(1), [
      { role: 'assistant', content: [call] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: 'Done.' }] },
    ]);
  });
});

describe("responses over messages: Anthropic's web search as web_search_call items", () => {
  const search = { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'switchyard' } };
  const result = {
    type: 'web_search_tool_result',
    tool_use_id: 'srvtoolu_1',
    content: [
      { type: 'web_search_result', url: 'https://example.com/a', title: 'A', encrypted_content: 'e1', page_age: null },
      { type: 'web_search_result', url: 'https://example.com/b', title: 'B', encrypted_content: 'e2', page_age: null },
    ],
  };
  const text = {
    type: 'text',
    text: 'Found.',
    citations: [{ type: 'web_search_result_location', url: 'https://example.com/a', title: 'A', cited_text: 'x' }],
  };
  const action = {
    type: 'search',
    query: 'switchyard',
    sources: [
      { type: 'url', url: 'https://example.com/a' },
      { type: 'url', url: 'https://example.com/b' },
    ],
  };

  test('the whole answer: the search, its sources, then the text (citations dropped)', () => {
    const { state } = translator.request(codexTurn(1), ANTHROPIC);
    const answer = translator.response(
      { content: [search, result, text], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 4 } },
      ANTHROPIC,
      state,
    ) as Json;
    assert.deepEqual(
      answer.output.map((o: Json) => ({ ...o, id: o.id.replace(/_.*/, '') })),
      [
        { type: 'web_search_call', id: 'ws', status: 'completed', action },
        {
          type: 'message',
          id: 'msg',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Found.', annotations: [], logprobs: [] }],
        },
      ],
    );
    const failed = translator.response(
      {
        content: [search, { ...result, content: { type: 'web_search_tool_result_error', error_code: 'unavailable' } }],
        stop_reason: 'end_turn',
      },
      ANTHROPIC,
      state,
    ) as Json;
    assert.equal(failed.output[0].status, 'failed');
  });

  test('the stream: in_progress, searching, completed, and the done item with its action', () => {
    const { state } = translator.request(codexTurn(1), ANTHROPIC);
    const list = streamed(state, [search, result, text], 'end_turn');
    assert.deepEqual(list.map((e) => e.type).slice(0, 8), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.web_search_call.in_progress',
      'response.web_search_call.searching',
      'response.web_search_call.completed',
      'response.output_item.done',
      'response.output_item.added',
    ]);
    assert.deepEqual(list[2]!.item, {
      type: 'web_search_call',
      id: list[2]!.item.id,
      status: 'in_progress',
      action: { type: 'search' },
    });
    assert.deepEqual(list[6]!.item, { type: 'web_search_call', id: list[2]!.item.id, status: 'completed', action });
    for (const e of list.slice(3, 6)) assert.deepEqual([e.item_id, e.output_index], [list[2]!.item.id, 0]);
    assert.equal(list.at(-1)!.response.output[1].content[0].text, 'Found.');
  });

  test('handed back in a later turn, a web_search_call item is dropped and the text it led to stays', () => {
    const { body: sent } = translator.request(
      {
        model: 'm',
        input: [
          { role: 'user', content: 'Search.' },
          { type: 'web_search_call', id: 'ws_1', status: 'completed', action },
          { role: 'assistant', content: [{ type: 'output_text', text: 'Found.' }] },
          { role: 'user', content: 'Thanks.' },
        ],
        tools: [{ type: 'web_search' }],
      },
      ANTHROPIC,
    );
    assert.deepEqual(
      (sent.messages as Json[]).map((m) => m.content[0].text),
      ['Search.', 'Found.', 'Thanks.'],
    );
  });
});

describe('responses over messages: reasoning summaries, both ways', () => {
  test("a thinking block is the reasoning item's summary, and Codex's reasoning item goes back as that block", () => {
    const body = codexTurn(1);
    const { state } = translator.request(body, ANTHROPIC);
    const thinking = { type: 'thinking', thinking: 'I should run it.', signature: 'RXNpZ25hdHVyZQ==' };
    const call = { type: 'tool_use', id: 'toolu_3', name: 'exec_command', input: { cmd: 'echo hi' } };
    const answer = translator.response(
      { content: [thinking, call], stop_reason: 'tool_use', usage: {} },
      ANTHROPIC,
      state,
    ) as Json;
    const reasoning = answer.output[0];
    assert.deepEqual(
      [reasoning.summary, reasoning.encrypted_content],
      [[{ type: 'summary_text', text: 'I should run it.' }], 'RXNpZ25hdHVyZQ=='],
    );
    // Codex sends a reasoning item back without its id, as it serializes them.
    const { id: _id, ...sentBack } = reasoning;
    const { body: next } = translator.request(
      {
        ...body,
        input: [
          ...body.input,
          sentBack,
          answer.output[1],
          { type: 'function_call_output', call_id: 'toolu_3', output: 'hi' },
        ],
      },
      ANTHROPIC,
    );
    assert.deepEqual((next.messages as Json[]).at(-2), { role: 'assistant', content: [thinking, call] });
  });
});
