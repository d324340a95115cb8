import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ServiceError } from '../../../protocol/errors.ts';
import {
  callItem,
  customInput,
  omittedHeaderValue,
  planToolChoice,
  planTools,
  TOOL_NAME_RULE,
} from '../../../workers/translate/responses-tools.ts';
import { codexTurn } from '../../helpers/codex.ts';

// The tools of a Responses request as both translations plan them (responses-tools.ts), against the tools Codex
// CLI 0.171 really sends (test/fixtures/translate/codex/, recorded): function tools as they are, a namespace
// flattened within the tool-name rule, OpenAI's web search kept only where the upstream runs its own, every
// other built-in tool left out and named, never refused.

type Json = Record<string, any>;

const fn = (name: string, extra: Json = {}) => ({ type: 'function', name, parameters: { type: 'object' }, ...extra });

describe('responses tools: the plan', () => {
  test("Codex's tools: its functions as they are, its namespace flattened, its web search kept or left out", () => {
    const { tools } = codexTurn(1);
    const kept = planTools(tools, true);
    assert.deepEqual(
      kept.tools.map((t) => t.name),
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
    // As recorded: Codex 0.171 asks for cached results only (`external_web_access: false`) by default.
    assert.deepEqual([kept.webSearch, kept.omitted], [{ type: 'web_search', external_web_access: false }, []]);
    const dropped = planTools(tools, false);
    assert.deepEqual([dropped.webSearch, dropped.omitted, dropped.tools.length], [null, ['web_search'], 12]);
    for (const tool of kept.tools) assert.match(tool.name, TOOL_NAME_RULE);
    // A namespace's tools keep their own schema; its description leads theirs.
    const namespace = tools.find((t: Json) => t.type === 'namespace');
    const spawn = namespace.tools.find((t: Json) => t.name === 'spawn_agent');
    const flat = kept.tools.find((t) => t.name === 'multi_agent_v1__spawn_agent')!;
    assert.deepEqual(flat, {
      name: 'multi_agent_v1__spawn_agent',
      description: `${namespace.description}\n\n${spawn.description}`,
      parameters: spawn.parameters,
      strict: false,
    });
    assert.deepEqual(kept.names.client('multi_agent_v1__spawn_agent'), {
      name: 'spawn_agent',
      namespace: 'multi_agent_v1',
      kind: 'function',
    });
    assert.deepEqual(kept.names.client('exec_command'), { name: 'exec_command', namespace: null, kind: 'function' });
    assert.equal(kept.names.upstream('wait_agent', 'multi_agent_v1'), 'multi_agent_v1__wait_agent');
  });

  test('names past the rule are shortened with a hash, the same every time; colliding names are made unique', () => {
    const long = 'n'.repeat(40);
    const tools = [
      fn('multi_agent_v1__spawn_agent'),
      fn('web_search'),
      { type: 'namespace', name: 'multi_agent_v1', description: '', tools: [fn('spawn_agent'), fn('x'.repeat(50))] },
      { type: 'namespace', name: long, description: 'd', tools: [fn('tool.with.dots')] },
      { type: 'web_search' },
    ];
    const plan = planTools(tools, true);
    const names = plan.tools.map((t) => t.name);
    // The client's own top-level names win; a namespaced name they already hold gets the hashed form.
    assert.equal(names[0], 'multi_agent_v1__spawn_agent');
    assert.match(names[2]!, /^multi_agent_v1__spawn_agent_[0-9a-f]{8}$/);
    // `web_search` is the upstream's own search tool's: the client's function of that name is renamed.
    assert.match(names[1]!, /^web_search_[0-9a-f]{8}$/);
    assert.match(names[3]!, /^multi_agent_v1__x{39}_[0-9a-f]{8}$/);
    assert.equal(names[3]!.length, 64);
    // Dots are outside the rule: they become `_`, the name is cut to 55 characters and the hash follows.
    assert.match(names[4]!, new RegExp(`^${long}__tool_with_dot_[0-9a-f]{8}$`));
    for (const name of names) assert.match(name, TOOL_NAME_RULE);
    assert.equal(new Set(names).size, names.length);
    assert.deepEqual(planTools(structuredClone(tools), true).tools, plan.tools, 'deterministic');
    assert.deepEqual(plan.names.client(names[4]!), { name: 'tool.with.dots', namespace: long, kind: 'function' });
    assert.equal(plan.names.upstream('tool.with.dots', long), names[4]);
    // Where the upstream has no web search, the client's `web_search` function keeps its name.
    assert.equal(planTools(tools, false).tools[1]!.name, 'web_search');
  });

  test('custom tools become functions of one string; other built-in tools are left out and named, in order', () => {
    const plan = planTools(
      [
        { type: 'file_search', vector_store_ids: ['vs_1'] },
        { type: 'custom', name: 'apply_patch', description: 'Patch files.', format: { type: 'text' } },
        {
          type: 'custom',
          name: 'sql',
          format: { type: 'grammar', syntax: 'lark', definition: 'start: "SELECT" /.+/' },
        },
        { type: 'code_interpreter', container: { type: 'auto' } },
        { type: 'computer_use_preview', display_width: 1024, display_height: 768, environment: 'linux' },
        { type: 'mcp', server_label: 'deepwiki', server_url: 'https://mcp.example/sse' },
        { type: 'image_generation' },
        { type: 'local_shell' },
        { type: 'file_search', vector_store_ids: ['vs_2'] },
        { type: 'web_search_preview' },
      ],
      false,
    );
    assert.deepEqual(plan.omitted, [
      'file_search',
      'code_interpreter',
      'computer_use_preview',
      'mcp',
      'image_generation',
      'local_shell',
      'web_search_preview',
    ]);
    assert.deepEqual(plan.tools, [
      {
        name: 'apply_patch',
        description: 'Patch files.',
        parameters: {
          type: 'object',
          properties: { input: { type: 'string', description: 'The input to the tool, as free text.' } },
          required: ['input'],
          additionalProperties: false,
        },
      },
      {
        name: 'sql',
        parameters: {
          type: 'object',
          properties: {
            input: {
              type: 'string',
              description: 'The input to the tool. It must match this lark grammar:\nstart: "SELECT" /.+/',
            },
          },
          required: ['input'],
          additionalProperties: false,
        },
      },
    ]);
    assert.deepEqual(plan.names.client('sql'), { name: 'sql', namespace: null, kind: 'custom' });
  });

  test('malformed tools are the client mistakes they were: a 400 naming the member', () => {
    const refused = (tools: unknown, param: string) =>
      assert.throws(
        () => planTools(tools, false),
        (err: unknown) => err instanceof ServiceError && err.status === 400 && err.param === param,
        param,
      );
    refused({ type: 'function' }, 'tools');
    refused([42], 'tools[0]');
    refused([{ name: 'x' }], 'tools[0].type');
    refused([{ type: 'function' }], 'tools[0].name');
    refused([fn('a'), { type: 'custom', name: 'a' }], 'tools[1].name');
    refused([{ type: 'namespace', name: 'ns' }], 'tools[0].tools');
    refused([{ type: 'namespace', tools: [] }], 'tools[0].name');
    refused([{ type: 'namespace', name: 'ns', tools: [fn('a'), fn('a')] }], 'tools[0].tools[1].name');
  });

  test('tool_choice: a tool by its upstream name, a built-in tool as auto, nothing when no tool is left', () => {
    const plan = planTools(
      [
        fn('f'),
        { type: 'custom', name: 'c' },
        { type: 'namespace', name: 'ns', description: '', tools: [fn('g')] },
        { type: 'file_search' },
      ],
      false,
    );
    assert.equal(planToolChoice('required', plan), 'required');
    assert.deepEqual(planToolChoice({ type: 'function', name: 'f' }, plan), { name: 'f' });
    assert.deepEqual(planToolChoice({ type: 'custom', name: 'c' }, plan), { name: 'c' });
    assert.deepEqual(planToolChoice({ type: 'function', name: 'g', namespace: 'ns' }, plan), { name: 'ns__g' });
    assert.equal(planToolChoice({ type: 'file_search' }, plan), 'auto');
    assert.equal(planToolChoice({ type: 'web_search_preview' }, plan), 'auto');
    assert.equal(planToolChoice('required', planTools([{ type: 'web_search' }], false)), undefined);
    assert.equal(planToolChoice(undefined, plan), undefined);
    assert.throws(() => planToolChoice({ type: 'allowed_tools', mode: 'auto', tools: [] }, plan), ServiceError);
    assert.throws(() => planToolChoice('sometimes', plan), ServiceError);
  });
});

describe('responses tools: the way back', () => {
  test("a call is the client's item: namespaced as OpenAI returns it, or a custom tool call with its input", () => {
    const fields = { id: 'fc_1', callId: 'call_1', text: '{"target":"a1"}', status: 'completed' };
    assert.deepEqual(callItem({ name: 'close_agent', namespace: 'multi_agent_v1', kind: 'function' }, fields), {
      type: 'function_call',
      id: 'fc_1',
      call_id: 'call_1',
      namespace: 'multi_agent_v1',
      name: 'close_agent',
      arguments: '{"target":"a1"}',
      status: 'completed',
    });
    assert.deepEqual(
      callItem({ name: 'apply_patch', namespace: null, kind: 'custom' }, { ...fields, text: '{"input":"*** Begin"}' }),
      {
        type: 'custom_tool_call',
        id: 'fc_1',
        call_id: 'call_1',
        name: 'apply_patch',
        input: '*** Begin',
        status: 'completed',
      },
    );
  });

  test("a custom call's input is read leniently: one string member, a JSON string, or the text itself", () => {
    assert.equal(customInput('{"input":"a\\nb"}'), 'a\nb');
    assert.equal(customInput('{"patch":"p"}'), 'p');
    assert.equal(customInput('"s"'), 's');
    assert.equal(customInput('not json'), 'not json');
    assert.equal(customInput('{"a":"x","b":"y"}'), '{"a":"x","b":"y"}');
    assert.equal(customInput(''), '');
  });

  test('the header value is bounded: safe characters, 64 each, 16 names, then how many more', () => {
    assert.equal(omittedHeaderValue(['web_search', 'file_search', 'web_search']), 'web_search,file_search');
    assert.equal(omittedHeaderValue(['bad type\r\nx: y']), 'bad_type__x:_y');
    assert.equal(omittedHeaderValue(['t'.repeat(100)]), 't'.repeat(64));
    const many = Array.from({ length: 20 }, (_, i) => `type_${i}`);
    const value = omittedHeaderValue(many);
    assert.deepEqual(value.split(',').slice(-2), ['type_15', '+4']);
    assert.equal(value.split(',').length, 17);
  });
});
