import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ServiceError } from '../../../protocol/errors.ts';
import { countAnswer, estimateTokens, labelled } from '../../../edge/gateway/count-tokens.ts';

// The estimate behind token counts for models nobody can count exactly (docs/api.md, "Token counting").

describe('estimated token counts', () => {
  it('counts the UTF-8 bytes of the prompt text over 4, rounded up, skipping IDs, tags and image bytes', () => {
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'abcd' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(4000) } },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_123456', name: 'f', input: { q: 'xyz' } }] },
    ];
    // 'sys' 3 + 'abcd' 4 + 'f' 1 + 'xyz' 3 = 11 bytes -> 3 tokens
    assert.equal(estimateTokens('messages.count_tokens', { system: 'sys', messages }), 3);
    // 'é' is two bytes: 'héllo' is 6 -> 2 tokens
    assert.equal(
      estimateTokens('responses.input_tokens', {
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'héllo' }] }],
      }),
      2,
    );
  });

  it('counts tool definitions as their JSON text', () => {
    const tools = [{ name: 'get_weather', input_schema: { type: 'object' } }];
    const bare = estimateTokens('messages.count_tokens', { messages: [{ role: 'user', content: 'hi' }] });
    const withTools = estimateTokens('messages.count_tokens', { messages: [{ role: 'user', content: 'hi' }], tools });
    assert.equal(withTools, Math.ceil((2 + JSON.stringify(tools).length) / 4));
    assert.ok(withTools > bare);
  });

  it('walks a deeply nested body without recursion', () => {
    let deep: unknown = 'abcd';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.equal(estimateTokens('responses.input_tokens', { input: [deep] }), 1);
  });

  it('refuses bodies it cannot count with a 400 naming the field', () => {
    const refused = (
      op: 'messages.count_tokens' | 'responses.input_tokens',
      body: Record<string, unknown>,
      param: string,
    ) =>
      assert.throws(
        () => estimateTokens(op, body),
        (err: unknown) => err instanceof ServiceError && err.code === 'INVALID_REQUEST' && err.param === param,
      );
    refused('messages.count_tokens', {}, 'messages');
    refused('messages.count_tokens', { messages: [] }, 'messages');
    refused('messages.count_tokens', { messages: [{ role: 'user', content: 'x' }], system: 5 }, 'system');
    refused('messages.count_tokens', { messages: [{ role: 'user', content: 'x' }], tools: {} }, 'tools');
    refused('responses.input_tokens', {}, 'input');
    refused('responses.input_tokens', { input: 'x', instructions: [] }, 'instructions');
    refused('responses.input_tokens', { input: 'x', conversation: 'conv_1' }, 'conversation');
  });
});

describe('count answers', () => {
  it("keep each family's documented shape", () => {
    assert.deepEqual(countAnswer('messages.count_tokens', 7), { input_tokens: 7 });
    assert.deepEqual(countAnswer('responses.input_tokens', 7), { object: 'response.input_tokens', input_tokens: 7 });
  });

  it('label a relayed whole answer and leave a stream alone', async () => {
    const whole = await labelled(
      Promise.resolve({ status: 200, headers: { 'content-type': 'application/json' }, raw: '{}' }),
      'provider',
    );
    assert.deepEqual(whole.headers, { 'content-type': 'application/json', 'x-service-token-count': 'provider' });
    const stream = { stream: () => {} };
    assert.equal(await labelled(Promise.resolve(stream), 'tokenizer'), stream);
  });
});
