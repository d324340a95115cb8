import { randomBytes } from 'node:crypto';
import type { RequestState, TranslateContext } from './types.ts';
import type { ResponsesCallContext } from './responses-over-chat/responses-chat.ts';
import { ToolNames, type ToolPlan } from './responses-tools.ts';

// The identity of one Responses call (its response ID, clock and the request the answer echoes), made when
// the request is translated and carried in the translator's state to the answer or the stream, whichever
// protocol the upstream speaks (chat completions or Messages).

interface ResponsesState extends RequestState {
  call: ResponsesCallContext;
}

const newId = (prefix: string) => `${prefix}_${randomBytes(16).toString('hex')}`;

/**
 * A new call for `body` as the client sent it (the answer echoes it, with the model as the client named it),
 * with its tool plan: the answer names each call's tool as the client did, and the tools left out are named
 * to the client (types.ts, RequestState).
 */
export function newCallState(body: Record<string, unknown>, ctx: TranslateContext, plan: ToolPlan): ResponsesState {
  return {
    includeUsage: false,
    omittedTools: plan.omitted,
    call: {
      responseId: newId('resp'),
      createdAt: ctx.now(),
      itemId: newId,
      request: { ...body, model: ctx.clientModel },
      tools: plan.names,
    },
  };
}

/** The call's identity from the request's state; a fresh one (echoing only the model) if a caller lost it. */
export function callOf(state: RequestState, ctx: TranslateContext): ResponsesCallContext {
  return (
    (state as Partial<ResponsesState>).call ?? {
      responseId: newId('resp'),
      createdAt: ctx.now(),
      itemId: newId,
      request: { model: ctx.clientModel },
      tools: new ToolNames(),
    }
  );
}
