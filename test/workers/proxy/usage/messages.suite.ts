import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createUsageCollector } from '../../../../workers/proxy/usage/collectors.ts';
import { collectJson, collectStream, messagesStream, sse } from './fixtures.ts';

describe('messages, whole answers', () => {
  it('sums the prompt from uncached, cache-written and cache-read tokens, and counts tool_use blocks', () => {
    const body = {
      id: 'msg_01Aq9w938a90dw8q',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [
        { type: 'text', text: 'I will use "tool_use" twice.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { location: 'Paris' } },
        { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { location: 'Oslo' } },
        { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'x' } },
        { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: 2095,
        cache_creation_input_tokens: 1000,
        cache_read_input_tokens: 4000,
        output_tokens: 503,
        server_tool_use: { web_search_requests: 1 },
      },
    };
    assert.deepEqual(collectJson('messages', body), {
      inputTokens: 7095,
      outputTokens: 503,
      cachedInputTokens: 4000,
      cacheWriteTokens: 1000,
      reasoningTokens: null,
      totalTokens: 7598,
      costUsd: null,
      toolCalls: { get_weather: 2, web_search: 1 },
      responseId: null,
    });
  });

  it('leaves the cache figures null when the upstream (Ollama, llama-server) reports none', () => {
    const usage = collectJson(
      'messages',
      { type: 'message', content: [{ type: 'text', text: 'hi' }], usage: { input_tokens: 12, output_tokens: 3 } },
      'ollama',
    );
    assert.deepEqual([usage.inputTokens, usage.cachedInputTokens, usage.totalTokens], [12, null, 15]);
  });
});

describe('messages, streams', () => {
  for (const withEventLines of [true, false]) {
    it(
      `takes message_start's prompt, the last cumulative output count and the streamed tool_use ` +
        `(${withEventLines ? 'with' : 'without'} event lines)`,
      () => {
        assert.deepEqual(collectStream('messages', messagesStream({ withEventLines })), {
          inputTokens: 2572,
          outputTokens: 89,
          cachedInputTokens: 2000,
          cacheWriteTokens: 100,
          reasoningTokens: null,
          totalTokens: 2661,
          costUsd: null,
          toolCalls: { get_weather: 1 },
          responseId: null,
        });
      },
    );
  }

  it('takes input figures that a message_delta repeats', () => {
    const usage = collectStream(
      'messages',
      messagesStream({
        deltaUsage: {
          input_tokens: 500,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 2000,
          output_tokens: 120,
        },
      }),
    );
    assert.deepEqual(
      [usage.inputTokens, usage.outputTokens, usage.cachedInputTokens, usage.cacheWriteTokens],
      [2500, 120, 2000, 0],
    );
  });

  it('keeps the last of several message_delta counts instead of adding them', () => {
    const start = {
      event: 'message_start',
      data: JSON.stringify({ type: 'message_start', message: { usage: { input_tokens: 10, output_tokens: 1 } } }),
    };
    const delta = (n: number) => ({
      event: 'message_delta',
      data: JSON.stringify({ type: 'message_delta', delta: {}, usage: { output_tokens: n } }),
    });
    assert.equal(collectStream('messages', sse([start, delta(40), delta(75)])).outputTokens, 75);
  });

  it('keeps what it found before an error event and ignores pings', () => {
    const stream =
      messagesStream().split('event: message_delta')[0] +
      sse([
        { event: 'ping', data: '{"type": "ping"}' },
        { event: 'error', data: '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}' },
      ]);
    const usage = collectStream('messages', stream);
    assert.deepEqual([usage.inputTokens, usage.outputTokens], [2572, 2]);
    assert.deepEqual(usage.toolCalls, { get_weather: 1 });
  });

  it('skips malformed events', () => {
    const collector = createUsageCollector('messages');
    collector.event({ event: 'message_start', data: '{"type":"message_start","message":{"usage":{"input_tokens":' });
    collector.event({
      event: 'content_block_start',
      data: '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","name":7}}',
    });
    collector.event({ event: 'message_delta', data: '{"type":"message_delta","usage":[1,2]}' });
    collector.event({ event: 'message_delta', data: '{"type":"message_delta","usage":{"output_tokens":4}}' });
    assert.deepEqual(collector.result(), {
      inputTokens: null,
      outputTokens: 4,
      cachedInputTokens: null,
      reasoningTokens: null,
      totalTokens: null,
      costUsd: null,
      toolCalls: { tool_use: 1 },
      responseId: null,
    });
  });
});
