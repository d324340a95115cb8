import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ServiceError } from '../../../protocol/errors.ts';
import { TRANSLATORS, type TranslateContext } from '../../../workers/translate/index.ts';
import {
  EFFORT_BUDGETS,
  responsesToMessagesRequest,
} from '../../../workers/translate/responses-over-messages/responses-messages.ts';
import { responsesEvents as events } from '../../helpers/responses-sse.ts';

// The Responses API over Messages beyond its golden transcripts (golden.suite.ts, responses-over-messages/):
// the registered translator's call identity, round trips of what the answer hands back, stream ends, and
// answers shaped like nothing expected.

type Json = Record<string, any>;

const DIR = join(import.meta.dirname, '../../fixtures/translate/responses-over-messages');
const translator = TRANSLATORS['styleA.responses<-styleB.messages'];
const ctx: TranslateContext = {
  upstreamModelId: 'claude-x',
  providerKind: 'anthropic',
  clientModel: 'anth/claude-x',
  streamUsage: false,
  now: () => 1_700_000_000,
};
const event = (type: string, fields: Json = {}) => ({
  event: type,
  data: JSON.stringify({ type, ...fields }),
  raw: '',
});

describe('responses over messages: the registered translator', () => {
  test(
    "names the upstream model, echoes the client's, and keeps the call's identity between request and " + 'answer',
    () => {
      const body = { model: 'anth/claude-x', input: 'hi' };
      const { body: sent, stream, state } = translator.request(body, ctx);
      assert.deepEqual([sent.model, stream, body.model], ['claude-x', false, 'anth/claude-x']);
      const answer = {
        content: [{ type: 'text', text: 'yo' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 3, output_tokens: 1 },
      };
      const first = translator.response(answer, ctx, state) as Json;
      const again = translator.response(answer, ctx, state) as Json;
      assert.deepEqual(
        [first.model, first.created_at, first.id, first.output_text],
        ['anth/claude-x', 1_700_000_000, again.id, undefined],
      );
      assert.match(String(first.id), /^resp_[0-9a-f]{32}$/);
      assert.match(String(first.output[0].id), /^msg_[0-9a-f]{32}$/);
      assert.equal((translator.response(answer, ctx, { includeUsage: false }) as Json).model, 'anth/claude-x');
      assert.equal(translator.request({ model: 'm', input: 'hi', stream: true }, ctx).stream, true);
    },
  );

  test('a reasoning item and function call handed back become the same thinking and tool_use blocks', () => {
    const upstream = {
      content: [
        { type: 'thinking', thinking: 'Weather needs a tool.', signature: 'c2lnLTE=' },
        { type: 'redacted_thinking', data: 'cmVkYWN0ZWQ=' },
        { type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { city: 'Oslo' } },
      ],
      stop_reason: 'tool_use',
      usage: { input_tokens: 5, output_tokens: 9 },
    };
    const { state } = translator.request({ model: 'm', input: 'x' }, ctx);
    const output = (translator.response(upstream, ctx, state) as Json).output as Json[];
    const next = translator.request(
      {
        model: 'm',
        input: [
          { role: 'user', content: 'Weather in Oslo?' },
          ...output,
          { type: 'function_call_output', call_id: 'toolu_9', output: 'sunny' },
        ],
      },
      ctx,
    );
    assert.deepEqual(next.body.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Weather in Oslo?' }] },
      { role: 'assistant', content: upstream.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'sunny' }] },
    ]);
  });

  test('an upstream error envelope becomes the Responses (styleA) envelope', () => {
    assert.deepEqual(
      translator.error(400, { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } }),
      { error: { message: 'bad', type: 'invalid_request_error', param: null, code: null } },
    );
  });
});

describe('responses over messages: reasoning effort', () => {
  test(
    'each effort is a thinking budget below max_tokens; without max_output_tokens the answer keeps 4096 tokens of ' +
      'room',
    () => {
      for (const [effort, budget] of Object.entries(EFFORT_BUDGETS)) {
        const sent = responsesToMessagesRequest({ model: 'm', input: 'x', reasoning: { effort } });
        assert.deepEqual(sent.thinking, { type: 'enabled', budget_tokens: budget }, effort);
        assert.equal(sent.max_tokens, Math.min(budget + 4096, 32_000), effort);
        assert.ok(budget >= 1024 && budget < (sent.max_tokens as number), effort);
      }
      assert.equal(
        responsesToMessagesRequest({ model: 'm', input: 'x', reasoning: { effort: 'none' } }).thinking,
        undefined,
      );
      // A summary asked for without an effort thinks at medium (a summary exists only where the model thinks);
      // `none` asks for none. Only Anthropic's own API is asked to show its thinking summarized.
      assert.deepEqual(
        responsesToMessagesRequest({ model: 'm', input: 'x', reasoning: { summary: 'auto' } }).thinking,
        {
          type: 'enabled',
          budget_tokens: EFFORT_BUDGETS.medium,
        },
      );
      assert.deepEqual(
        responsesToMessagesRequest({ model: 'm', input: 'x', reasoning: { summary: 'detailed' } }, { anthropic: true })
          .thinking,
        { type: 'enabled', budget_tokens: EFFORT_BUDGETS.medium, display: 'summarized' },
      );
      assert.equal(
        responsesToMessagesRequest({ model: 'm', input: 'x', reasoning: { summary: 'none' } }).thinking,
        undefined,
      );
      assert.deepEqual(
        responsesToMessagesRequest({ model: 'm', input: 'x', reasoning: { effort: 'low' } }, { anthropic: true })
          .thinking,
        { type: 'enabled', budget_tokens: EFFORT_BUDGETS.low },
      );
      assert.throws(
        () => responsesToMessagesRequest({ model: 'm', input: 'x', reasoning: { summary: 'verbose' } }),
        (err: unknown) => err instanceof ServiceError && err.param === 'reasoning.summary',
      );
      assert.deepEqual(
        responsesToMessagesRequest({ model: 'm', input: 'x', max_output_tokens: 1025, reasoning: { effort: 'high' } })
          .thinking,
        { type: 'enabled', budget_tokens: 1024 },
      );
    },
  );
});

describe('responses over messages: prompt_cache_key as cache breakpoints', () => {
  const marks = (body: unknown) => JSON.stringify(body).split('"cache_control"').length - 1;
  const ephemeral = { type: 'ephemeral' };
  const body = {
    model: 'm',
    prompt_cache_key: 'session-1',
    instructions: 'Be brief.',
    tools: [
      { type: 'function', name: 'a' },
      { type: 'function', name: 'b' },
    ],
    input: [
      { role: 'developer', content: '' },
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'hi' },
          { type: 'input_text', text: '' },
        ],
      },
    ],
  };

  test('the last tool, the last system block and the last block of the last message, three in all', () => {
    const sent = responsesToMessagesRequest(structuredClone(body));
    assert.deepEqual(
      (sent.tools as Json[]).map((t) => t.cache_control),
      [undefined, ephemeral],
    );
    assert.deepEqual(sent.system, [{ type: 'text', text: 'Be brief.', cache_control: ephemeral }]);
    assert.deepEqual(sent.messages, [
      { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: ephemeral }] },
    ]);
    assert.equal(marks(sent), 3);
  });

  test('none without a key; never on a thinking block, nor on a part that is not there', () => {
    assert.equal(marks(responsesToMessagesRequest({ ...body, prompt_cache_key: undefined })), 0);
    assert.equal(marks(responsesToMessagesRequest({ ...body, prompt_cache_key: '' })), 0);
    const sent = responsesToMessagesRequest({
      model: 'm',
      prompt_cache_key: 'k',
      input: [
        { role: 'user', content: 'hi' },
        { type: 'reasoning', summary: [{ type: 'summary_text', text: 'hm' }], encrypted_content: 'c2ln' },
      ],
    });
    assert.deepEqual(sent.messages, [
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 'c2ln' }] },
    ]);
    assert.equal(marks(sent), 0);
  });
});

describe('responses over messages: streams', () => {
  test('every golden transcript numbers its events from 0 and names each by its type', () => {
    for (const file of readdirSync(DIR).filter((f) => f.endsWith('.client.sse'))) {
      const list = events(readFileSync(join(DIR, file), 'utf8'));
      assert.deepEqual(
        list.map((e) => e.sequence_number),
        list.map((_, i) => i),
        file,
      );
      assert.ok(['response.completed', 'response.incomplete', 'response.failed'].includes(list.at(-1)!.type), file);
    }
  });

  test(
    'a stream cut before its stop_reason closes nothing (the relay reports the failure); after it, end() ' +
      'completes',
    () => {
      const { state } = translator.request({ model: 'm', input: 'x', stream: true }, ctx);
      const cut = translator.stream(ctx, state);
      let out = cut.push(event('message_start', { message: { usage: { input_tokens: 4, output_tokens: 1 } } }));
      out += cut.push(event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
      out += cut.push(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hi' } }));
      assert.equal(cut.end(), '');
      assert.equal(cut.closed(), false);
      assert.deepEqual(
        events(out)
          .map((e) => e.type)
          .slice(-1),
        ['response.output_text.delta'],
      );

      const ended = translator.stream(ctx, state);
      ended.push(event('message_start', { message: { usage: { input_tokens: 4, output_tokens: 1 } } }));
      ended.push(event('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }));
      const last = events(ended.end()).at(-1)!;
      assert.deepEqual([last.type, last.response.usage.total_tokens, ended.closed()], ['response.completed', 6, true]);
      assert.equal(ended.push(event('message_stop')), '');
    },
  );

  test('garbage events are skipped, never thrown', () => {
    const mapper = translator.stream(ctx, { includeUsage: false });
    for (const data of [
      'not json',
      '42',
      'null',
      '[]',
      '{"type":"content_block_delta"}',
      '{"type":"content_block_start","content_block":7}',
    ]) {
      assert.doesNotThrow(() => mapper.push({ event: null, data, raw: '' }), data);
    }
  });
});

describe('responses over messages: odd answers', () => {
  test(
    'an answer that is not a message becomes an empty message with zero usage, never a throw (it is metered ' +
      'already)',
    () => {
      for (const odd of [null, 42, 'x', [], { content: null }, { content: [null, 7, { type: 'server_tool_use' }] }]) {
        const response = translator.response(odd, ctx, { includeUsage: false }) as Json;
        assert.deepEqual(
          response.output.map((o: Json) => [o.type, o.content[0].text]),
          [['message', '']],
          JSON.stringify(odd),
        );
        assert.deepEqual([response.status, response.usage.total_tokens], ['completed', 0]);
      }
    },
  );
});
