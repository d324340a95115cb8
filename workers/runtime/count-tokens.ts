import type { ChatHistoryItem, ChatModelFunctions } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import { responsesToChatRequest } from '../translate/responses-over-chat/responses-chat.ts';
import { parseChatRequest } from './chat.ts';
import { messagesConversation } from './messages.ts';
import { offeredFunctions } from './tools.ts';
import type { LoadedModel } from './models.ts';

// Token counts on a loaded model: the request's conversation rendered with the model's chat template, as a
// generation would render it, and tokenized with the model's own vocabulary. The count equals the
// `input_tokens` a generation of the same conversation reports.

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

/** What a count renders: the conversation, and the tools when a generation would document them. */
export interface Counted {
  history: ChatHistoryItem[];
  functions: ChatModelFunctions | undefined;
}

/**
 * A styleB count_tokens body as the conversation its generation would render: the same parsing as the messages
 * route, so the tools count as a generation shows them: through the chat template for tool_choice auto, or in
 * the system turn a forced call adds to the history (workers/runtime/tools.ts).
 */
export function messagesHistory(body: Record<string, unknown>): Counted {
  const { history, tools } = messagesConversation(body);
  return { history, functions: offeredFunctions(tools) };
}

/** A Responses input_tokens body as a chat history and tools, through the same mapping /v1/responses uses. */
export function responsesHistory(body: Record<string, unknown>): Counted {
  for (const field of ['previous_response_id', 'conversation'] as const) {
    if (body[field] !== undefined && body[field] !== null)
      throw invalid(field, 'The embedded runtime keeps no stored responses: send the whole conversation in `input`.');
  }
  const chat = parseChatRequest(responsesToChatRequest(body));
  return { history: chat.history, functions: offeredFunctions(chat.tools) };
}

/**
 * The prompt's tokens. The rendered prompt holds one token more than a generation evaluates (see
 * answerBudget in generate.ts): the count leaves it out, so that it matches the generation's usage.
 */
export function countTokens(model: LoadedModel, { history, functions }: Counted): number {
  const rendered = model.chatWrapper
    .generateContextState({ chatHistory: history, ...(functions && { availableFunctions: functions }) })
    .contextText.tokenize(model.model.tokenizer).length;
  return Math.max(0, rendered - 1);
}
