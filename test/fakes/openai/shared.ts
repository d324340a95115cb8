import type { Reply } from '../http.ts';
import { isObject, type FakeState, type JsonObject } from '../script.ts';
import { sseData, type InStreamError } from '../stream.ts';

// What every styleA route shares: which server it impersonates, its error envelope and its usage block.

/** The four styleA flavours plus Ollama's OpenAI-compatible layer, which serves the same routes. */
export type Dialect = 'openai' | 'openrouter' | 'compatible' | 'llamacpp' | 'ollama';

export interface StyleAContext {
  dialect: Dialect;
  state: FakeState;
}

/** Each server's error body for a request it refuses (validation, unknown id). */
export function styleAError(ctx: StyleAContext, status: number, message: string, param: string | null = null): Reply {
  const requestId = { 'x-request-id': ctx.state.nextId('req_') };
  switch (ctx.dialect) {
    case 'openrouter':
      return { status, body: { error: { message, code: status } }, headers: requestId };
    case 'compatible':
      // vLLM's envelope: the exception class as `type`, the status as `code`.
      return {
        status,
        body: { error: { message, type: status === 404 ? 'NotFoundError' : 'BadRequestError', param, code: status } },
      };
    case 'llamacpp':
      return {
        status,
        body: { error: { code: status, message, type: status === 404 ? 'not_found_error' : 'invalid_request_error' } },
      };
    case 'openai':
    case 'ollama':
      return {
        status,
        body: { error: { message, type: 'invalid_request_error', param, code: null } },
        headers: requestId,
      };
  }
}

/** Headers a real server sets on every answer; the id lets a test see the gateway relayed them (or not). */
export function answerHeaders(ctx: StyleAContext): Record<string, string> {
  return ctx.dialect === 'openai' || ctx.dialect === 'openrouter' ? { 'x-request-id': ctx.state.nextId('req_') } : {};
}

/** Chat and embeddings usage. Ollama reports only the three totals; OpenRouter adds what the call cost. */
export function chatUsage(ctx: StyleAContext): JsonObject {
  const u = ctx.state.usage;
  const totals = {
    prompt_tokens: u.inputTokens,
    completion_tokens: u.outputTokens,
    total_tokens: u.inputTokens + u.outputTokens,
  };
  if (ctx.dialect === 'ollama') return totals;
  const detailed = {
    ...totals,
    prompt_tokens_details: { cached_tokens: u.cachedTokens, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: u.reasoningTokens,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
  return ctx.dialect === 'openrouter' ? { ...detailed, cost: u.costUsd, is_byok: false } : detailed;
}

/** Responses API usage (`input_tokens`...), also what compact reports. */
export function responsesUsage(ctx: StyleAContext): JsonObject {
  const u = ctx.state.usage;
  const usage: JsonObject = {
    input_tokens: u.inputTokens,
    input_tokens_details: { cached_tokens: u.cachedTokens },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens },
    total_tokens: u.inputTokens + u.outputTokens,
  };
  return ctx.dialect === 'openrouter' ? { ...usage, cost: u.costUsd } : usage;
}

/** Names of the function tools a chat request offers (`{type: function, function: {name}}`). */
export function chatToolNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((t: unknown) =>
    isObject(t) && t.type === 'function' && isObject(t.function) && typeof t.function.name === 'string'
      ? [t.function.name]
      : [],
  );
}

/** Names of the function tools a Responses request offers (`{type: function, name}`). */
export function responsesToolNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((t: unknown) =>
    isObject(t) && t.type === 'function' && typeof t.name === 'string' ? [t.name] : [],
  );
}

/** How OpenAI reports a failure once a chat stream has begun: a data event carrying `error`. */
export function chatStreamError(error: InStreamError): string {
  return sseData({ error: { message: error.message, type: error.type, param: null, code: null } });
}
