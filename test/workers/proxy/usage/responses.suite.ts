import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  collectJson,
  collectStream,
  FUNCTION_CALL_ITEM,
  RESPONSES_USAGE,
  responsesStream,
  WEB_SEARCH_ITEM,
} from './fixtures.ts';

const TOKENS = {
  inputTokens: 328,
  outputTokens: 52,
  cachedInputTokens: 128,
  reasoningTokens: 32,
  totalTokens: 380,
  costUsd: null,
};
const RESPONSE_ID = 'resp_67ccd2bed1ec8190b14f964abc054267';

describe('responses.create, whole answers', () => {
  it('reads usage, the response ID and every kind of tool call in the output', () => {
    const body = {
      id: RESPONSE_ID,
      object: 'response',
      created_at: 1741476542,
      status: 'completed',
      model: 'gpt-5-2025-08-07',
      output: [
        { id: 'rs_1', type: 'reasoning', summary: [] },
        FUNCTION_CALL_ITEM,
        { ...FUNCTION_CALL_ITEM, id: 'fc_2', call_id: 'call_2' },
        WEB_SEARCH_ITEM,
        { id: 'fs_1', type: 'file_search_call', status: 'completed', queries: ['q'], results: null },
        {
          id: 'cu_1',
          type: 'computer_call',
          call_id: 'c1',
          action: { type: 'screenshot' },
          pending_safety_checks: [],
          status: 'completed',
        },
        {
          id: 'ci_1',
          type: 'code_interpreter_call',
          status: 'completed',
          code: 'print(1)',
          container_id: 'cntr_1',
          outputs: null,
        },
        { id: 'mcp_1', type: 'mcp_call', name: 'roll', server_label: 'dice', arguments: '{}', output: '4' },
        { id: 'ctc_1', type: 'custom_tool_call', call_id: 'call_9', name: 'code_exec', input: 'print(2)' },
        { id: 'mcpl_1', type: 'mcp_list_tools', server_label: 'dice', tools: [] },
        {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'done', annotations: [] }],
        },
      ],
      usage: RESPONSES_USAGE,
    };
    assert.deepEqual(collectJson('responses.create', body), {
      ...TOKENS,
      toolCalls: {
        get_weather: 2,
        web_search_call: 1,
        file_search_call: 1,
        computer_call: 1,
        code_interpreter_call: 1,
        roll: 1,
        code_exec: 1,
      },
      responseId: RESPONSE_ID,
    });
  });

  it('reads a compaction the same way', () => {
    const body = {
      id: 'cmp_1',
      object: 'response.compaction',
      created_at: 1,
      output: [{ id: 'cmp_item', type: 'compaction', encrypted_content: 'x' }],
      usage: RESPONSES_USAGE,
    };
    assert.deepEqual(collectJson('responses.compact', body), { ...TOKENS, toolCalls: {}, responseId: 'cmp_1' });
  });

  it("reads OpenRouter's cost", () => {
    assert.equal(
      collectJson(
        'responses.create',
        { id: 'gen-1', output: [], usage: { ...RESPONSES_USAGE, cost: 0.0012 } },
        'openrouter',
      ).costUsd,
      0.0012,
    );
  });
});

describe('responses.create, streams', () => {
  for (const withEventLines of [true, false]) {
    it(
      `reads the ID from response.created and usage from response.completed (${withEventLines ? 'with' : 'without'} ` +
        `event lines)`,
      () => {
        assert.deepEqual(collectStream('responses.create', responsesStream({ withEventLines })), {
          ...TOKENS,
          toolCalls: { get_weather: 1, web_search_call: 1 },
          responseId: RESPONSE_ID,
        });
      },
    );
  }

  for (const terminal of ['response.incomplete', 'response.failed'] as const) {
    it(`reads usage from ${terminal}`, () => {
      const usage = collectStream('responses.create', responsesStream({ terminal }));
      assert.equal(usage.totalTokens, 380);
      assert.deepEqual(usage.toolCalls, { get_weather: 1, web_search_call: 1 });
    });
  }

  it('keeps the ID and the calls already made when the stream is cut before its end', () => {
    assert.deepEqual(collectStream('responses.create', responsesStream({ terminal: null })), {
      inputTokens: null,
      outputTokens: null,
      cachedInputTokens: null,
      reasoningTokens: null,
      totalTokens: null,
      costUsd: null,
      toolCalls: { get_weather: 1, web_search_call: 1 },
      responseId: RESPONSE_ID,
    });
  });
});
