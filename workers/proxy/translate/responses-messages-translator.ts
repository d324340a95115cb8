import { randomBytes } from 'node:crypto';
import { chatError } from './chat-over-messages.ts';
import type { RequestState, TranslateContext, TranslatedRequest, Translator } from './index.ts';
import type { ResponsesCallContext } from './responses-chat.ts';
import { messageToResponse } from './responses-messages-answer.ts';
import { responsesStreamOverMessages } from './responses-messages-stream.ts';
import { responsesToMessagesRequest } from './responses-messages.ts';

// The Responses-over-Messages translator as the relay's registry takes it (index.ts states the contract).
// As over chat, the call's identity (response ID, clock, the request the answer echoes) rides in the state.

interface ResponsesState extends RequestState {
  call: ResponsesCallContext;
}

const newId = (prefix: string) => `${prefix}_${randomBytes(16).toString('hex')}`;

/** The call's identity from the request's state; a fresh one (echoing only the model) if a caller lost it. */
function callOf(state: RequestState, ctx: TranslateContext): ResponsesCallContext {
  return (state as Partial<ResponsesState>).call ?? { responseId: newId('resp'), createdAt: ctx.now(), itemId: newId, request: { model: ctx.clientModel } };
}

function request(body: Record<string, unknown>, ctx: TranslateContext): TranslatedRequest {
  const messages = responsesToMessagesRequest(body);
  messages.model = ctx.upstreamModelId;
  const call: ResponsesCallContext = { responseId: newId('resp'), createdAt: ctx.now(), itemId: newId, request: { ...body, model: ctx.clientModel } };
  const state: ResponsesState = { includeUsage: false, call };
  return { body: messages, stream: messages.stream === true, state };
}

export const responsesOverMessages: Translator = {
  request,
  response: (json, ctx, state) => messageToResponse(json, callOf(state, ctx)),
  stream: (ctx, state) => responsesStreamOverMessages(callOf(state, ctx)),
  // Responses errors share chat's envelope: `{error: {message, type, param, code}}`.
  error: chatError,
};
