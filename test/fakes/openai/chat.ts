import type { Handler } from '../http.ts';
import {
  bodyOf,
  nowSeconds,
  plannedCalls,
  splitText,
  stringField,
  type FakeToolCall,
  type JsonObject,
} from '../script.ts';
import { sseData, type StreamReply } from '../stream.ts';
import { answerHeaders, chatStreamError, chatToolNames, chatUsage, styleAError, type StyleAContext } from './shared.ts';

// POST /chat/completions as OpenAI's reference documents it: a `chat.completion` object, or with
// `stream: true` a run of `data: {chat.completion.chunk}` events ending in `data: [DONE]`. With
// `stream_options.include_usage` every chunk carries `"usage": null` and one last chunk with `choices: []`
// carries the usage; without it, no usage appears anywhere in the stream. OpenRouter is the exception: it
// always ends a stream with the usage chunk (its Usage Accounting docs: `stream_options.include_usage` is
// deprecated and has no effect), and marks the other chunks `"usage": null` only when asked.

interface PlannedCall extends FakeToolCall {
  id: string;
  json: string;
}

interface Answer {
  id: string;
  created: number;
  model: string;
  text: string;
  calls: PlannedCall[];
}

function fingerprint(ctx: StyleAContext): string {
  return ctx.dialect === 'ollama' ? 'fp_ollama' : 'fp_fake';
}

/** Fields every completion and chunk share, per server. */
function envelope(ctx: StyleAContext, answer: Answer, object: string): JsonObject {
  const base: JsonObject = {
    id: answer.id,
    object,
    created: answer.created,
    model: answer.model,
    system_fingerprint: fingerprint(ctx),
  };
  if (ctx.dialect === 'openai') base.service_tier = 'default';
  if (ctx.dialect === 'openrouter') base.provider = 'FakeProvider';
  return base;
}

function plan(ctx: StyleAContext, body: JsonObject, model: string): Answer {
  const calls = plannedCalls(ctx.state.output, chatToolNames(body.tools), body.tool_choice).map((call) => ({
    ...call,
    id: ctx.state.nextId('call_'),
    json: JSON.stringify(call.arguments),
  }));
  // A model that calls tools answers with the calls alone, as OpenAI's models do.
  const text = calls.length > 0 ? '' : ctx.state.output.text;
  return { id: ctx.state.nextId('chatcmpl-'), created: nowSeconds(), model, text, calls };
}

function finishReason(answer: Answer): string {
  return answer.calls.length > 0 ? 'tool_calls' : 'stop';
}

function completion(ctx: StyleAContext, answer: Answer): JsonObject {
  const message: JsonObject = {
    role: 'assistant',
    content: answer.calls.length > 0 ? null : answer.text,
    refusal: null,
    annotations: [],
  };
  if (answer.calls.length > 0) {
    message.tool_calls = answer.calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.json },
    }));
  }
  return {
    ...envelope(ctx, answer, 'chat.completion'),
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(answer) }],
    usage: chatUsage(ctx),
  };
}

function chunkEvents(ctx: StyleAContext, answer: Answer, includeUsage: boolean): string[] {
  const usageChunk = includeUsage || ctx.dialect === 'openrouter';
  const head = envelope(ctx, answer, 'chat.completion.chunk');
  const chunk = (delta: JsonObject, finish: string | null = null): string =>
    sseData({
      ...head,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    });

  const events = [chunk({ role: 'assistant', content: answer.calls.length > 0 ? null : '', refusal: null })];
  if (answer.text !== '')
    for (const piece of splitText(answer.text, ctx.state.output.chunks)) events.push(chunk({ content: piece }));
  answer.calls.forEach((call, index) => {
    // The first delta of a call names it; its arguments follow in pieces, as OpenAI streams them.
    events.push(
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
    );
    for (const piece of splitText(call.json, ctx.state.output.argumentChunks)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  events.push(chunk({}, finishReason(answer)));
  if (usageChunk) events.push(sseData({ ...head, choices: [], usage: chatUsage(ctx) }));
  events.push(sseData('[DONE]'));
  return events;
}

export function chatRoutes(ctx: StyleAContext, prefix: string): Record<string, Handler> {
  const create: Handler = (req) => {
    const body = bodyOf(req.json);
    const model = stringField(body, 'model');
    if (model === undefined) return styleAError(ctx, 400, 'you must provide a model parameter', 'model');
    if (!Array.isArray(body.messages))
      return styleAError(ctx, 400, "Missing required parameter: 'messages'.", 'messages');
    const answer = plan(ctx, body, model);
    if (body.stream !== true) return { status: 200, body: completion(ctx, answer), headers: answerHeaders(ctx) };
    const options = bodyOf(body.stream_options);
    const reply: StreamReply = {
      status: 200,
      events: chunkEvents(ctx, answer, options.include_usage === true),
      errorEvent: chatStreamError,
      headers: answerHeaders(ctx),
    };
    return reply;
  };
  return { [`POST ${prefix}/chat/completions`]: create };
}
