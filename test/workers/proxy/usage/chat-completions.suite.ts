import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createUsageCollector } from '../../../../workers/proxy/usage/collectors.ts';
import {
  CHAT_USAGE,
  chatStream,
  collectJson,
  collectStream,
  OPENROUTER_BASE,
  OPENROUTER_USAGE,
  sse,
  TEXT_CHOICES,
} from './fixtures.ts';

const EXPECTED_TOKENS = {
  inputTokens: 82,
  outputTokens: 48,
  cachedInputTokens: 64,
  reasoningTokens: 16,
  totalTokens: 130,
  costUsd: null,
};

describe('chat.completions, whole answers', () => {
  it('reads usage and counts each tool call of each choice', () => {
    const body = {
      id: 'chatcmpl-abc123',
      object: 'chat.completion',
      created: 1741569952,
      model: 'gpt-4.1-2025-04-14',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } },
              { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Oslo"}' } },
              { id: 'call_3', type: 'custom', custom: { name: 'code_exec', input: 'print(1)' } },
            ],
            refusal: null,
            annotations: [],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
        {
          index: 1,
          message: { role: 'assistant', content: null, function_call: { name: 'lookup', arguments: '{}' } },
          finish_reason: 'function_call',
        },
      ],
      usage: CHAT_USAGE,
      service_tier: 'default',
    };
    assert.deepEqual(collectJson('chat.completions', body), {
      ...EXPECTED_TOKENS,
      toolCalls: { get_weather: 2, code_exec: 1, lookup: 1 },
      responseId: null,
    });
  });

  it("reads OpenRouter's cost in USD", () => {
    const body = {
      ...OPENROUTER_BASE,
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }],
      usage: OPENROUTER_USAGE,
    };
    const usage = collectJson('chat.completions', body, 'openrouter');
    assert.equal(usage.costUsd, 0.000495);
    assert.equal(usage.inputTokens, 194);
    assert.equal(usage.cachedInputTokens, 0);
  });

  it('sums the total when the upstream leaves it out', () => {
    const usage = collectJson('chat.completions', { choices: [], usage: { prompt_tokens: 10, completion_tokens: 5 } });
    assert.equal(usage.totalTokens, 15);
    assert.equal(usage.cachedInputTokens, null);
    assert.equal(usage.reasoningTokens, null);
  });
});

describe('chat.completions, streams', () => {
  it('reads the usage chunk and counts two parallel tool calls once each', () => {
    assert.deepEqual(collectStream('chat.completions', chatStream({ includeUsage: true })), {
      ...EXPECTED_TOKENS,
      toolCalls: { get_weather: 1, get_time: 1 },
      responseId: null,
    });
  });

  it('counts tool calls without usage when the stream carries none', () => {
    assert.deepEqual(collectStream('chat.completions', chatStream({ includeUsage: false })), {
      inputTokens: null,
      outputTokens: null,
      cachedInputTokens: null,
      reasoningTokens: null,
      totalTokens: null,
      costUsd: null,
      toolCalls: { get_weather: 1, get_time: 1 },
      responseId: null,
    });
  });

  it('keeps calls of different choices apart (n > 1)', () => {
    const delta = (choice: number, name: string) => ({
      data: JSON.stringify({
        choices: [
          {
            index: choice,
            delta: {
              tool_calls: [{ index: 0, id: `call_${choice}`, type: 'function', function: { name, arguments: '' } }],
            },
          },
        ],
      }),
    });
    const usage = collectStream('chat.completions', sse([delta(0, 'search'), delta(1, 'search'), { data: '[DONE]' }]));
    assert.deepEqual(usage.toolCalls, { search: 2 });
  });

  it('counts a call once when a server repeats its name in every delta', () => {
    const delta = (args: string) => ({
      data: JSON.stringify({
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index: 0, type: 'function', function: { name: 'search', arguments: args } }] },
          },
        ],
      }),
    });
    assert.deepEqual(collectStream('chat.completions', sse([delta('{"q":'), delta('"x"}')])).toolCalls, { search: 1 });
  });

  it('tells calls apart by id when a server sends no index', () => {
    const call = (id: string) => ({
      data: JSON.stringify({
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ id, type: 'function', function: { name: 'search', arguments: '{}' } }] },
          },
        ],
      }),
    });
    assert.deepEqual(collectStream('chat.completions', sse([call('a'), call('b'), call('a')])).toolCalls, {
      search: 2,
    });
  });

  it("reads Ollama's usage chunk and its one-chunk tool calls", () => {
    const base = {
      id: 'chatcmpl-592',
      object: 'chat.completion.chunk',
      created: 1741570283,
      model: 'qwen3:8b',
      system_fingerprint: 'fp_ollama',
    };
    const stream = sse([
      {
        data: JSON.stringify({
          ...base,
          choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
        }),
      },
      {
        data: JSON.stringify({
          ...base,
          choices: [
            {
              index: 0,
              delta: {
                role: 'assistant',
                content: '',
                tool_calls: [
                  {
                    id: 'call_x1',
                    index: 0,
                    type: 'function',
                    function: { name: 'get_weather', arguments: '{"city":"Toronto"}' },
                  },
                ],
              },
              finish_reason: null,
            },
          ],
        }),
      },
      {
        data: JSON.stringify({
          ...base,
          choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: 'tool_calls' }],
        }),
      },
      {
        data: JSON.stringify({
          ...base,
          choices: [],
          usage: { prompt_tokens: 153, completion_tokens: 21, total_tokens: 174 },
        }),
      },
      { data: '[DONE]' },
    ]);
    assert.deepEqual(collectStream('chat.completions', stream, 'ollama'), {
      inputTokens: 153,
      outputTokens: 21,
      cachedInputTokens: null,
      reasoningTokens: null,
      totalTokens: 174,
      costUsd: null,
      toolCalls: { get_weather: 1 },
      responseId: null,
    });
  });

  it("reads OpenRouter's cost from the last chunk, past its keep-alive comments", () => {
    const stream = chatStream({
      includeUsage: true,
      base: OPENROUTER_BASE,
      usage: OPENROUTER_USAGE,
      choices: TEXT_CHOICES,
      comments: ['OPENROUTER PROCESSING', 'OPENROUTER PROCESSING'],
    });
    const usage = collectStream('chat.completions', stream, 'openrouter');
    assert.equal(usage.costUsd, 0.000495);
    assert.equal(usage.totalTokens, 196);
  });

  it('takes usage attached to the finishing chunk (llama-server) and the last of cumulative reports', () => {
    const stream = sse([
      {
        data: JSON.stringify({
          choices: [{ index: 0, delta: { content: 'a' } }],
          usage: { prompt_tokens: 9, completion_tokens: 1, total_tokens: 10 },
        }),
      },
      {
        data: JSON.stringify({
          choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
          usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 },
          timings: { predicted_n: 2 },
        }),
      },
      { data: '[DONE]' },
    ]);
    const usage = collectStream('chat.completions', stream, 'llamacpp');
    assert.equal(usage.outputTokens, 2);
    assert.equal(usage.totalTokens, 11);
  });

  it('ignores whatever follows [DONE]', () => {
    const usage = collectStream(
      'chat.completions',
      sse([
        { data: '[DONE]' },
        { data: JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } }) },
      ]),
    );
    assert.equal(usage.inputTokens, null);
  });

  it('does not mistake content that talks about usage or tool calls for either', () => {
    const content = 'set "usage": {"prompt_tokens": 5} and "tool_calls": [{"function": {"name": "x"}}]';
    const stream = sse([
      { data: JSON.stringify({ choices: [{ index: 0, delta: { content } }], usage: null }) },
      { data: '[DONE]' },
    ]);
    const usage = collectStream('chat.completions', stream);
    assert.equal(usage.inputTokens, null);
    assert.deepEqual(usage.toolCalls, {});
  });

  it('skips a malformed chunk and keeps what the others said', () => {
    const collector = createUsageCollector('chat.completions');
    collector.event({
      event: null,
      data: '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"a"',
    });
    collector.event({
      event: null,
      data: JSON.stringify({
        choices: [{ index: 0, delta: { tool_calls: [{ index: 1, function: { name: 'b', arguments: '' } }] } }],
      }),
    });
    collector.event({ event: null, data: '{"choices":[],"usage":{"prompt_tokens":' });
    collector.event({
      event: null,
      data: JSON.stringify({
        choices: 'none',
        usage: { prompt_tokens: -3, completion_tokens: 2.5, total_tokens: '7', prompt_tokens_details: null },
      }),
    });
    const usage = collector.result();
    assert.deepEqual(usage.toolCalls, { b: 1 });
    assert.deepEqual(
      [usage.inputTokens, usage.outputTokens, usage.totalTokens, usage.cachedInputTokens],
      [null, null, null, null],
    );
  });
});
