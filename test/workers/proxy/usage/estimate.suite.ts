import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bodyBytesOf, contentBytesOf, withEstimate } from '../../../../workers/proxy/usage/estimate.ts';
import { createStreamTap } from '../../../../workers/proxy/usage/stream-tap.ts';

// The estimate a call whose usage never arrives is metered and settled at (W4.6 item 3).

const chunk = (delta: Record<string, unknown>) =>
  Buffer.from(
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta }] })}\n\n`,
  );

describe('contentBytesOf', () => {
  it('counts the generated text of each protocol, escapes as written, and nothing else', () => {
    assert.equal(contentBytesOf('chat.completions', chunk({ content: 'he said "hi"' })), 14);
    assert.equal(contentBytesOf('chat.completions', chunk({ reasoning_content: 'think' })), 5);
    const call = chunk({ tool_calls: [{ index: 0, function: { name: 'lookup', arguments: '{"q":1}' } }] });
    assert.equal(contentBytesOf('chat.completions', call), '{\\"q\\":1}'.length);
    // The model's name, the IDs and the role are no content.
    assert.equal(contentBytesOf('chat.completions', chunk({ role: 'assistant' })), 0);
    const text = Buffer.from(
      'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"abc"}}\n\n',
    );
    assert.equal(contentBytesOf('messages', text), 3);
    const json = Buffer.from('data: {"delta":{"type":"input_json_delta","partial_json":"{\\"a\\""}}\n\n');
    assert.equal(contentBytesOf('messages', json), 6);
    const delta = Buffer.from('data: {"type":"response.output_text.delta","delta":"xy","item_id":"m"}\n\n');
    assert.equal(contentBytesOf('responses.create', delta), 2);
    // Unstreamed operations count nothing.
    assert.equal(contentBytesOf('embeddings', delta), 0);
  });
});

describe('withEstimate', () => {
  it('fills in what was not reported, at 3 bytes a token, and marks it', () => {
    assert.deepEqual(withEstimate(null, 301, 30), {
      inputTokens: 101,
      outputTokens: 10,
      cachedInputTokens: null,
      reasoningTokens: null,
      totalTokens: 111,
      costUsd: null,
      toolCalls: {},
      estimated: true,
    });
    // A Messages stream states its input at its start: only the output is estimated.
    const started = {
      inputTokens: 42,
      outputTokens: null,
      cachedInputTokens: 8,
      reasoningTokens: null,
      totalTokens: null,
      costUsd: null,
      toolCalls: {},
    };
    assert.deepEqual(withEstimate(started, 9_000, 9), {
      ...started,
      outputTokens: 3,
      totalTokens: 45,
      estimated: true,
    });
    // A whole report is kept as it is.
    const whole = { ...started, outputTokens: 5, totalTokens: 47 };
    assert.equal(withEstimate(whole, 9_000, 9), whole);
  });

  it('reads a body however it travels', () => {
    assert.equal(bodyBytesOf('abc'), 3);
    assert.equal(bodyBytesOf(new ArrayBuffer(7)), 7);
    assert.equal(bodyBytesOf({ length: 9 }), 9);
    assert.equal(bodyBytesOf(null), 0);
  });
});

describe('a stream tap', () => {
  it('counts the text it passed to the client, stripping the injected usage or not', () => {
    for (const stripInjectedUsage of [false, true]) {
      const tap = createStreamTap('chat.completions', { stripInjectedUsage, providerKind: 'openai' });
      tap.push(chunk({ role: 'assistant', content: '' }));
      tap.push(chunk({ content: 'Hello' }));
      tap.push(chunk({ content: ', world' }));
      assert.equal(tap.contentBytes(), 12, `stripInjectedUsage ${stripInjectedUsage}`);
    }
  });
});
