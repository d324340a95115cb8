import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ServiceError } from '../../../protocol/errors.ts';
import {
  chatToResponse,
  responsesToChatRequest,
  type ResponsesCallContext,
} from '../../../workers/translate/responses-over-chat/responses-chat.ts';
import { responsesStream } from '../../../workers/translate/responses-over-chat/responses-chat-stream.ts';
import { TRANSLATORS } from '../../../workers/translate/index.ts';
import { responsesEvents as events } from '../../helpers/responses-sse.ts';

// Golden transcripts of the Responses API served over chat completions: each fixture under
// test/fixtures/translate/responses/ holds a Responses request, the chat request it becomes, the chat
// answer (whole, or its SSE text) and the Responses answer (the object, or the event list). Set
// GOLDEN_UPDATE=1 to rewrite the expected halves after a deliberate change, then review the diff.

const DIR = new URL('../../fixtures/translate/responses/', import.meta.url);
const UPDATE = process.env.GOLDEN_UPDATE === '1';

type Json = Record<string, unknown>;

function context(request: Json): ResponsesCallContext {
  let n = 0;
  return { responseId: 'resp_golden', createdAt: 1_700_000_000, itemId: (prefix) => `${prefix}_${++n}`, request };
}

function golden(name: string, actual: Json): void {
  const file = new URL(`${name}.json`, DIR);
  const stored = JSON.parse(readFileSync(file, 'utf8')) as Json;
  if (UPDATE) {
    writeFileSync(file, `${JSON.stringify({ ...stored, ...actual }, null, 2)}\n`);
    return;
  }
  for (const key of Object.keys(actual)) assert.deepEqual(actual[key], stored[key], `${name}: ${key}`);
}

function wholeCase(name: string): void {
  const fixture = JSON.parse(readFileSync(new URL(`${name}.json`, DIR), 'utf8')) as Json;
  const request = fixture.request as Json;
  golden(name, {
    chatRequest: responsesToChatRequest(request),
    response: chatToResponse(fixture.chatAnswer, context(request)),
  });
}

/** Feeds the chat stream in pieces of `split` characters, so frames and lines arrive cut anywhere. */
function streamCase(name: string, split: number): Json[] {
  const fixture = JSON.parse(readFileSync(new URL(`${name}.json`, DIR), 'utf8')) as Json;
  const request = fixture.request as Json;
  const chatText = (fixture.chatStream as string[]).join('');
  const stream = responsesStream(context(request));
  let out = '';
  for (let at = 0; at < chatText.length; at += split) out += stream.push(chatText.slice(at, at + split));
  out += stream.end();
  const list = events(out);
  golden(name, { chatRequest: responsesToChatRequest(request), events: list });
  return list;
}

describe('responses over chat: whole answers', () => {
  it(
    'turns instructions, a string input and sampling into a chat request, and the answer into a response with ' +
      'usage',
    () => {
      wholeCase('text');
    },
  );
  it('carries a function tool round trip: parallel calls join one assistant turn, outputs become tool messages', () => {
    wholeCase('tools');
  });
  it('maps json_schema text formats, images, developer messages and a length finish (incomplete)', () => {
    wholeCase('format-incomplete');
  });
});

describe('responses over chat: streams', () => {
  it('streams text as created, in_progress, item and part events, deltas, and completed with usage', () => {
    const list = streamCase('stream-text', 7);
    assert.deepEqual(
      list.map((e) => e.sequence_number),
      list.map((_, i) => i),
    );
  });
  it('streams reasoning, then text closed before two interleaved function calls', () => {
    streamCase('stream-tools', 13);
  });
  it('ends with error and response.failed when the upstream reports an error mid-stream', () => {
    const list = streamCase('stream-error', 64);
    assert.equal(list.at(-1)!.type, 'response.failed');
  });
  it('closes nothing when the stream is cut before its finish: the relay reports that failure', () => {
    const stream = responsesStream(context({ model: 'm', input: 'x' }));
    const out = stream.push('data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n');
    assert.deepEqual(
      events(out + stream.end()).map((e) => e.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
      ],
    );
    assert.equal(stream.closed(), false);
  });
});

describe('responses over chat: stream ends', () => {
  it('completes at [DONE] even when the server left out finish_reason', () => {
    const stream = responsesStream(context({ model: 'm', input: 'x' }));
    const out = stream.push('data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\ndata: [DONE]\n\n');
    const last = events(out).at(-1)!;
    assert.deepEqual(
      [last.type, (last.response as Json).status, stream.closed()],
      ['response.completed', 'completed', true],
    );
    assert.equal(stream.end(), '');
  });
});

describe('responses over chat: refused requests', () => {
  const refused = (body: Json, param: string) =>
    assert.throws(
      () => responsesToChatRequest({ model: 'm', input: 'hi', ...body }),
      (err: unknown) => err instanceof ServiceError && err.code === 'INVALID_REQUEST' && err.param === param,
    );
  it('refuses stored state by name: previous_response_id, store, conversation, background, item references', () => {
    refused({ previous_response_id: 'resp_1' }, 'previous_response_id');
    refused({ store: true }, 'store');
    refused({ conversation: 'conv_1' }, 'conversation');
    refused({ background: true }, 'background');
    refused({ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0].type');
  });
  it('accepts store false and stateless reasoning items handed back', () => {
    const chat = responsesToChatRequest({
      model: 'm',
      store: false,
      input: [
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { role: 'user', content: 'hi' },
      ],
    });
    assert.deepEqual(chat.messages, [{ role: 'user', content: 'hi' }]);
  });
  it('refuses what chat cannot carry, naming the field', () => {
    refused({ input: [] }, 'input');
    refused({ input: 42 }, 'input');
    refused({ input: [{ role: 'tool', content: 'x' }] }, 'input[0].role');
    refused({ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] }, 'input[0].content[0].type');
    refused({ input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: {} }] }, 'input[0].arguments');
    refused({ tools: [{ name: 'x' }] }, 'tools[0].type');
    refused({ tools: [{ type: 'function' }] }, 'tools[0].name');
    refused({ tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'allowed_tools' } }, 'tool_choice');
    refused({ text: { format: { type: 'yaml' } } }, 'text.format.type');
    refused({ max_output_tokens: 0 }, 'max_output_tokens');
    refused({ temperature: 'hot' }, 'temperature');
    refused({ instructions: ['x'] }, 'instructions');
  });
  it('answers an empty message, never a throw, for a chat answer without a choice (it is metered already)', () => {
    const response = chatToResponse({ choices: [] }, context({ model: 'm' }));
    assert.deepEqual(response.output, [
      {
        type: 'message',
        id: 'msg_1',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: '', annotations: [], logprobs: [] }],
      },
    ]);
    assert.equal(response.usage, null);
  });
  it('never throws on an answer that is not an object (JSON null, a number, a string, an array)', () => {
    for (const odd of [null, 42, 'x', [], [{ choices: [] }], { choices: [null] }, { choices: [{ message: null }] }]) {
      const response = chatToResponse(odd, context({ model: 'm' }));
      assert.equal((response.output as { type: string }[])[0]!.type, 'message', JSON.stringify(odd));
      assert.equal(response.usage, null);
    }
  });
});

describe('responses over chat: the registered translator', () => {
  const ctx = {
    upstreamModelId: 'qwen',
    providerKind: 'openai_compatible' as const,
    clientModel: 'compat/qwen',
    streamUsage: true,
    now: () => 1_700_000_000,
  };
  const translator = TRANSLATORS['styleA.responses<-styleA.chat_completions'];

  it("names the upstream model, echoes the client's, and keeps the call's identity between request and answer", () => {
    const body = { model: 'compat/qwen', input: 'hi' };
    const { body: chat, stream, state } = translator.request(body, ctx);
    assert.deepEqual([chat.model, stream, body.model], ['qwen', false, 'compat/qwen']);
    const answer = { choices: [{ index: 0, message: { role: 'assistant', content: 'yo' }, finish_reason: 'stop' }] };
    const first = translator.response(answer, ctx, state) as Json;
    const again = translator.response(answer, ctx, state) as Json;
    assert.deepEqual([first.model, first.created_at, first.id], ['compat/qwen', 1_700_000_000, again.id]);
    assert.match(String(first.id), /^resp_[0-9a-f]{32}$/);
    // A state without the call (not the relay's) still answers, never throws: the call is metered already.
    assert.equal((translator.response(answer, ctx, { includeUsage: false }) as Json).model, 'compat/qwen');
  });

  it('asks for stream usage only from kinds that take stream_options', () => {
    const withUsage = translator.request({ model: 'm', input: 'hi', stream: true }, ctx);
    assert.deepEqual([withUsage.stream, withUsage.body.stream_options], [true, { include_usage: true }]);
    assert.equal(
      translator.request({ model: 'm', input: 'hi', stream: true }, { ...ctx, streamUsage: false }).body.stream_options,
      undefined,
    );
  });

  it('maps SSE events through the state and passes styleA error envelopes on', () => {
    const { state } = translator.request({ model: 'm', input: 'hi', stream: true }, ctx);
    const mapper = translator.stream(ctx, state);
    const out =
      mapper.push({
        event: null,
        data: '{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}',
        raw: '',
      }) + mapper.push({ event: null, data: '[DONE]', raw: '' });
    assert.deepEqual(
      events(out)
        .map((e) => e.type)
        .at(-1),
      'response.completed',
    );
    assert.equal(mapper.closed(), true);
    const envelope = { error: { message: 'bad', type: 'invalid_request_error', param: 'x', code: null } };
    assert.equal(translator.error(400, envelope), envelope);
    assert.deepEqual(translator.error(502, 'Bad Gateway'), {
      error: { message: 'Bad Gateway', type: 'server_error', param: null, code: null },
    });
  });
});
