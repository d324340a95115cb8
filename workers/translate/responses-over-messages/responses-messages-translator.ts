import { chatError } from '../chat-over-messages/chat-over-messages.ts';
import type { TranslateContext, TranslatedRequest, Translator } from '../types.ts';
import { callOf, newCallState } from '../responses-call.ts';
import { messageToResponse } from './responses-messages-answer.ts';
import { responsesStreamOverMessages } from './responses-messages-stream.ts';
import { responsesToMessagesRequest } from './responses-messages.ts';

// The Responses-over-Messages translator as the relay's registry takes it (index.ts states the contract).
// As over chat, the call's identity (response ID, clock, the request the answer echoes) rides in the state
// (responses-call.ts).

function request(body: Record<string, unknown>, ctx: TranslateContext): TranslatedRequest {
  // Thinking display is Anthropic's own API's; other Messages servers are not asked for it.
  const messages = responsesToMessagesRequest(body, { anthropic: ctx.providerKind === 'anthropic' });
  messages.model = ctx.upstreamModelId;
  return { body: messages, stream: messages.stream === true, state: newCallState(body, ctx) };
}

export const responsesOverMessages: Translator = {
  request,
  response: (json, ctx, state) => messageToResponse(json, callOf(state, ctx)),
  stream: (ctx, state) => responsesStreamOverMessages(callOf(state, ctx)),
  // Responses errors share chat's envelope: `{error: {message, type, param, code}}`.
  error: chatError,
};
