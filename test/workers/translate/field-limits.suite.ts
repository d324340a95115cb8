import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ServiceError } from '../../../protocol/errors.ts';
import { TRANSLATORS, type TranslateContext } from '../../../workers/translate/index.ts';
import { createSseBlockReader } from '../../../workers/shared/sse.ts';

// The limits the target protocol puts on members a translation copies (docs/api.md, "Translation between
// protocols", "Limits"): Claude Code's metadata.user_id, MCP tool names, stop sequences, tool counts,
// temperature ranges and tool-call IDs.

const overChat = TRANSLATORS['styleB.messages<-styleA.chat_completions'];
const overMessages = TRANSLATORS['styleA.chat_completions<-styleB.messages'];
const ctx = (providerKind: TranslateContext['providerKind']): TranslateContext => ({
  upstreamModelId: 'up',
  clientModel: 'client',
  providerKind,
  streamUsage: true,
  now: () => 1700000000,
});

// What Claude Code 2.1.x sends: a JSON string of about 150 characters.
const CLAUDE_CODE_USER = JSON.stringify({
  device_id: 'a'.repeat(64),
  account_uuid: '',
  session_id: '0b0e1f5e-3c2d-4f6a-9b8c-7d6e5f4a3b2c',
});
const LONG_TOOL = 'mcp__plugin_chrome-devtools-mcp_chrome-devtools__performance_analyze_insight';

const refusedWith = (param: string) => (err: unknown) =>
  err instanceof ServiceError && err.code === 'INVALID_REQUEST' && err.param === param;

describe('Messages over chat: field limits', () => {
  test("Claude Code's metadata.user_id becomes a stable user of at most 64 characters", () => {
    assert.ok(CLAUDE_CODE_USER.length > 128);
    const body = (user: string) => ({
      model: 'm',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
      metadata: { user_id: user },
    });
    const first = overChat.request(body(CLAUDE_CODE_USER), ctx('openai')).body.user as string;
    const again = overChat.request(body(CLAUDE_CODE_USER), ctx('openai')).body.user as string;
    const other = overChat.request(body(`${CLAUDE_CODE_USER} `), ctx('openai')).body.user as string;
    assert.ok(first.length <= 64, first);
    assert.match(first, /^sy_[A-Za-z0-9_-]{43}$/);
    assert.equal(first, again);
    assert.notEqual(first, other);
    assert.equal(overChat.request(body('user-42'), ctx('openai')).body.user, 'user-42', 'a short ID goes as it is');
    assert.equal(overChat.request(body('x'.repeat(64)), ctx('openai')).body.user, 'x'.repeat(64));
  });

  test('a tool name over 64 characters is shortened upstream and named as the client named it in the answer', () => {
    const request = {
      model: 'm',
      max_tokens: 10,
      tools: [
        { name: LONG_TOOL, input_schema: { type: 'object' } },
        { name: 'Bash', input_schema: { type: 'object' } },
      ],
      tool_choice: { type: 'tool', name: LONG_TOOL },
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: LONG_TOOL, input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' }] },
      ],
    };
    const out = overChat.request(request, ctx('openai'));
    const tools = out.body.tools as { function: { name: string } }[];
    const short = tools[0]!.function.name;
    assert.equal(short.length, 64);
    assert.match(short, /^[a-zA-Z0-9_-]{1,64}$/);
    assert.ok(short.startsWith(LONG_TOOL.slice(0, 55)));
    assert.equal(tools[1]!.function.name, 'Bash');
    assert.deepEqual(out.body.tool_choice, { type: 'function', function: { name: short } });
    const history = (out.body.messages as { tool_calls?: { function: { name: string } }[] }[])[1]!;
    assert.equal(history.tool_calls![0]!.function.name, short, 'the history names the tool as the tools list does');

    const answer = {
      id: 'c1',
      model: 'up',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: short, arguments: '{}' } }],
          },
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 2 },
    };
    const whole = overChat.response(answer, ctx('openai'), out.state) as { content: { name: string }[] };
    assert.equal(whole.content[0]!.name, LONG_TOOL);

    const mapper = overChat.stream(ctx('openai'), out.state);
    let text = '';
    const reader = createSseBlockReader((_b, _t, event) => {
      if (event !== null) text += mapper.push(event);
    });
    const chunk = {
      id: 'c1',
      model: 'up',
      choices: [
        {
          index: 0,
          delta: {
            tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: short, arguments: '{}' } }],
          },
        },
      ],
    };
    reader.push(Buffer.from(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`));
    reader.end();
    assert.ok(text.includes(`"name":"${LONG_TOOL}"`), text);
    assert.ok(!text.includes(short));
  });

  test('more stop sequences or tools than a chat model takes are refused, naming the member', () => {
    const base = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    assert.deepEqual(overChat.request({ ...base, stop_sequences: ['a', 'b', 'c', 'd'] }, ctx('openai')).body.stop, [
      'a',
      'b',
      'c',
      'd',
    ]);
    assert.throws(
      () => overChat.request({ ...base, stop_sequences: ['a', 'b', 'c', 'd', 'e'] }, ctx('openai')),
      refusedWith('stop_sequences'),
    );
    const tools = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ name: `t${i}`, input_schema: { type: 'object' } }));
    assert.equal((overChat.request({ ...base, tools: tools(128) }, ctx('openai')).body.tools as unknown[]).length, 128);
    assert.throws(() => overChat.request({ ...base, tools: tools(129) }, ctx('openai')), refusedWith('tools'));
  });
});

describe('chat over Messages: field limits', () => {
  const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

  test('a user over 256 characters becomes a stable metadata.user_id; a short one goes as it is', () => {
    const long = 'u'.repeat(300);
    const meta = (user: string) =>
      overMessages.request({ ...base, user }, ctx('anthropic')).body.metadata as { user_id: string };
    assert.equal(meta('alice').user_id, 'alice');
    assert.match(meta(long).user_id, /^sy_[A-Za-z0-9_-]{43}$/);
    assert.equal(meta(long).user_id, meta(long).user_id);
  });

  test('a temperature above 1 is refused (Messages takes 0 to 1); 1 goes as it is', () => {
    assert.equal(overMessages.request({ ...base, temperature: 1 }, ctx('anthropic')).body.temperature, 1);
    assert.throws(
      () => overMessages.request({ ...base, temperature: 1.5 }, ctx('anthropic')),
      refusedWith('temperature'),
    );
  });

  test(
    'tool-call IDs a Messages upstream refuses become stable IDs of its alphabet, the same in call and ' + 'result',
    () => {
      const request = {
        model: 'm',
        messages: [
          { role: 'user', content: 'go' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'functions.get_weather:0', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'functions.get_weather:0', content: 'sunny' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_ok-1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'call_ok-1', content: 'rain' },
        ],
      };
      const messages = overMessages.request(request, ctx('anthropic')).body.messages as {
        content: { id?: string; tool_use_id?: string }[];
      }[];
      const use = messages[1]!.content[0]!.id!;
      const result = messages[2]!.content[0]!.tool_use_id!;
      assert.match(use, /^[a-zA-Z0-9_-]+$/);
      assert.equal(use, result);
      assert.equal(messages[3]!.content[0]!.id, 'call_ok-1', 'an ID in the alphabet goes as it is');
    },
  );
});

// Found by running Claude Code 2.1.332 against the service: it sends `output_config: {effort}` on every call
// and system turns inside `messages`; both were refused for chat upstreams.
describe('Messages over chat: what current Claude Code sends', () => {
  const base = { model: 'm', max_tokens: 10 };

  test(
    'output_config: effort and task_budget dropped, a JSON-schema format becomes response_format, anything else ' +
      'refused',
    () => {
      const plain = overChat.request(
        {
          ...base,
          messages: [{ role: 'user', content: 'hi' }],
          output_config: { effort: 'high', task_budget: { type: 'tokens', total: 400000 } },
        },
        ctx('openai'),
      ).body;
      assert.equal('output_config' in plain, false);
      assert.equal('response_format' in plain, false);
      const schema = { type: 'object', properties: { a: { type: 'string' } } };
      const shaped = overChat.request(
        {
          ...base,
          messages: [{ role: 'user', content: 'hi' }],
          output_config: { format: { type: 'json_schema', schema } },
        },
        ctx('openai'),
      ).body;
      assert.deepEqual(shaped.response_format, {
        type: 'json_schema',
        json_schema: { name: 'output', schema, strict: true },
      });
      assert.throws(
        () => overChat.request({ ...base, messages: [], output_config: { verbosity: 'low' } }, ctx('openai')),
        refusedWith('output_config.verbosity'),
      );
      assert.throws(
        () => overChat.request({ ...base, messages: [], output_config: { format: { type: 'regex' } } }, ctx('openai')),
        refusedWith('output_config.format'),
      );
    },
  );

  test('a system turn inside messages becomes a system message where it stands', () => {
    const request = {
      ...base,
      system: 'You are terse.',
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'system',
          content: [{ type: 'text', text: 'Now answer in French.' }],
          output_config: { effort: 'low' },
        },
        { role: 'user', content: 'again' },
      ],
    };
    const messages = overChat.request(request, ctx('openai')).body.messages as { role: string; content: unknown }[];
    assert.deepEqual(
      messages.map((m) => m.role),
      ['system', 'user', 'system', 'user'],
    );
    assert.deepEqual(messages[2]!.content, [{ type: 'text', text: 'Now answer in French.' }]);
    assert.throws(
      () => overChat.request({ ...base, messages: [{ role: 'system', content: [{ type: 'image' }] }] }, ctx('openai')),
      refusedWith('messages[0].content[0]'),
    );
    assert.throws(
      () => overChat.request({ ...base, messages: [{ role: 'tool', content: 'x' }] }, ctx('openai')),
      refusedWith('messages[0].role'),
    );
  });
});
