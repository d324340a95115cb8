import { chatError } from '../chat-over-messages/chat-over-messages.ts';
import type { TranslateContext, TranslatedRequest, Translator } from '../types.ts';
import { callOf, newCallState } from '../responses-call.ts';
import { messageToResponse } from './responses-messages-answer.ts';
import { responsesStreamOverMessages } from './responses-messages-stream.ts';
import { responsesToMessages } from './responses-messages.ts';

// The Responses-over-Messages translator as the relay's registry takes it (index.ts states the contract).
// As over chat, the call's identity (response ID, clock, the request the answer echoes) rides in the state
// (responses-call.ts), with the plan of its tools.

function request(body: Record<string, unknown>, ctx: TranslateContext): TranslatedRequest {
  // Server tools and thinking display are Anthropic's own API's; other Messages servers get neither.
  const { request: messages, plan } = responsesToMessages(body, { anthropic: ctx.providerKind === 'anthropic' });
  messages.model = ctx.upstreamModelId;
  return { body: messages, stream: messages.stream === true, state: newCallState(body, ctx, plan) };
}

export const responsesOverMessages: Translator = {
  request,
  response: (json, ctx, state) => messageToResponse(json, callOf(state, ctx)),
  stream: (ctx, state) => responsesStreamOverMessages(callOf(state, ctx)),
  // Responses errors share chat's envelope: `{error: {message, type, param, code}}`.
  error: chatError,
};
