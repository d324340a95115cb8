import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ServiceError } from '../../../protocol/errors.ts';
import {
  chatTools,
  documentForced,
  grammarSchema,
  messagesTools,
  parseForcedCall,
} from '../../../workers/runtime/tools.ts';

const param = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ServiceError && err.code === 'INVALID_REQUEST', String(err));
    return err.param;
  }
  assert.fail('no error');
};

describe('a client JSON schema as the grammar subset', () => {
  test('keeps what the grammar enforces, drops what it cannot, reads anyOf as oneOf', () => {
    const schema = grammarSchema(
      {
        $schema: 'x',
        title: 'T',
        type: 'object',
        properties: {
          n: { type: 'integer', minimum: 3, default: 4 },
          s: { anyOf: [{ type: 'string', maxLength: 8 }, { type: 'null' }] },
        },
        required: ['n'],
      },
      'p',
    );
    assert.deepEqual(schema, {
      type: 'object',
      properties: { n: { type: 'integer' }, s: { oneOf: [{ type: 'string', maxLength: 8 }, { type: 'null' }] } },
      required: ['n'],
    });
  });

  test('properties without a type are an object; an object without properties has none; {} is any scalar', () => {
    assert.deepEqual(grammarSchema({ properties: {} }, 'p'), { type: 'object', properties: {} });
    assert.deepEqual(grammarSchema({ type: 'object' }, 'p'), { type: 'object', properties: {} });
    assert.deepEqual(grammarSchema({}, 'p'), { type: ['string', 'number', 'boolean', 'null'] });
  });

  test('refuses what it cannot express, naming the place', () => {
    assert.equal(
      param(() => grammarSchema({ type: 'object', properties: { a: { $ref: '#/x' } } }, 'tools[0].parameters')),
      'tools[0].parameters.properties.a',
    );
    assert.equal(
      param(() => grammarSchema({ type: 'date' }, 'p')),
      'p.type',
    );
    assert.equal(
      param(() => grammarSchema('string', 'p')),
      'p',
    );
    assert.equal(
      param(() => grammarSchema({ anyOf: [] }, 'p')),
      'p.anyOf',
    );
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 20; i++) deep = { type: 'array', items: deep };
    assert.match(String(param(() => grammarSchema(deep, 'p'))), /^p(\.items)+$/);
  });
});

describe('tools and tool_choice of both protocols', () => {
  test('styleA: choices map to none/auto/required/a name; a name not among the tools is refused', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
    assert.equal(chatTools({ tools })?.choice, 'auto');
    assert.equal(chatTools({ tools, tool_choice: 'required' })?.choice, 'required');
    assert.deepEqual(chatTools({ tools, tool_choice: { type: 'function', function: { name: 'f' } } })?.choice, {
      name: 'f',
    });
    assert.equal(chatTools({ tools: [] }), null);
    assert.equal(
      param(() => chatTools({ tools, tool_choice: 'sometimes' })),
      'tool_choice',
    );
    assert.equal(
      param(() => chatTools({ tools: Array.from({ length: 129 }, () => tools[0]) })),
      'tools',
    );
  });

  test('styleB: any is required, tool is a name, server tools are refused', () => {
    const tools = [{ name: 'g', input_schema: { type: 'object', properties: {} } }];
    assert.equal(messagesTools({ tools, tool_choice: { type: 'any' } })?.choice, 'required');
    assert.deepEqual(messagesTools({ tools, tool_choice: { type: 'tool', name: 'g' } })?.choice, { name: 'g' });
    assert.equal(
      param(() => messagesTools({ tools: [{ type: 'web_search_20250305', name: 'web_search' }] })),
      'tools[0].type',
    );
    assert.equal(
      param(() => messagesTools({ tools, tool_choice: { type: 'tool', name: 'h' } })),
      'tool_choice',
    );
  });

  test('a forced call cut off before its JSON closed is no call', () => {
    assert.equal(parseForcedCall('{"name":"f","argum', 'call_'), null);
    const call = parseForcedCall('{"name":"f","arguments":{"a":1}}', 'toolu_');
    assert.ok(call?.id.startsWith('toolu_'));
    assert.deepEqual([call?.name, call?.arguments], ['f', { a: 1 }]);
  });
});

describe('a forced call shows the model its tools', () => {
  const tools = [
    {
      type: 'function',
      function: {
        name: 'f',
        description: 'Does f',
        parameters: { type: 'object', properties: { a: { type: 'integer' } } },
      },
    },
    { type: 'function', function: { name: 'g', parameters: { type: 'object', properties: {} } } },
  ];
  const history = [{ type: 'user' as const, text: 'hi' }];

  test('a named tool: a system turn first naming it alone, with its description and schema', () => {
    const out = documentForced(
      history,
      chatTools({ tools, tool_choice: { type: 'function', function: { name: 'f' } } }),
    );
    assert.equal(out.length, 2);
    assert.equal(out[0]!.type, 'system');
    const text = (out[0] as { text: string }).text;
    assert.match(
      text,
      /- f: Does f\n {2}arguments schema: \{"type":"object","properties":\{"a":\{"type":"integer"\}\}\}/,
    );
    assert.ok(!text.includes('- g'));
    assert.deepEqual(out.slice(1), history);
  });

  test('required names every tool; auto, none and no tools leave the history as it is', () => {
    assert.match(
      (documentForced(history, chatTools({ tools, tool_choice: 'required' }))[0] as { text: string }).text,
      /- f: Does f[\s\S]*- g\n/,
    );
    for (const choice of ['auto', 'none'])
      assert.equal(documentForced(history, chatTools({ tools, tool_choice: choice })), history);
    assert.equal(documentForced(history, null), history);
  });
});
