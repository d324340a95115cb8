import type { TranslateContext, TranslatedRequest, Translator } from '../types.ts';
import { isRecord } from '../common.ts';
import { callOf, newCallState } from '../responses-call.ts';
import { chatToResponse, responsesToChat } from './responses-chat.ts';
import { responsesStream } from './responses-chat-stream.ts';

// The Responses-over-chat translator as the relay's registry takes it (index.ts states the contract). The
// call's own identity (response ID, clock, the client's request the answer echoes) rides in the state the
// relay hands back to `response` and `stream` (responses-call.ts).

function request(body: Record<string, unknown>, ctx: TranslateContext): TranslatedRequest {
  const { request: chat, plan } = responsesToChat(body);
  chat.model = ctx.upstreamModelId;
  // Without stream usage the completed response has `usage: null`; only kinds that take the option get it.
  if (!ctx.streamUsage) delete chat.stream_options;
  return { body: chat, stream: chat.stream === true, state: newCallState(body, ctx, plan) };
}

/** The Responses API's errors use the same envelope as chat's: an upstream's is passed on as it is. */
function error(status: number, body: unknown): unknown {
  if (isRecord(body) && isRecord(body.error)) return body;
  const message = typeof body === 'string' ? body.slice(0, 2000) : '';
  return {
    error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: null },
  };
}

export const responsesOverChat: Translator = {
  request,
  response: (json, ctx, state) => chatToResponse(json, callOf(state, ctx)),
  stream(ctx, state) {
    const mapper = responsesStream(callOf(state, ctx));
    return { push: (event) => mapper.data(event.data), end: mapper.end, closed: mapper.closed };
  },
  error,
};
