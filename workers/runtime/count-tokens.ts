import type { ChatHistoryItem } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import { chatMessages } from '../proxy/translate/responses-chat.ts';
import { parseChatRequest, textOf } from './chat.ts';
import type { LoadedModel } from './models.ts';

// Token counts on a loaded model: the request's conversation rendered with the model's chat template, as a
// generation would render it, and tokenized with the model's own vocabulary. The count equals the
// `input_tokens` a generation of the same conversation reports.

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

function refuseTools(body: Record<string, unknown>): void {
  if (Array.isArray(body.tools) && body.tools.length > 0) throw invalid('tools', 'The embedded runtime does not run tools, so it does not count them.');
}

/** A styleB count_tokens body as a chat history (text content only, as the messages route takes it). */
export function messagesHistory(body: Record<string, unknown>): ChatHistoryItem[] {
  refuseTools(body);
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw invalid('messages', '`messages` must be a non-empty array.');
  const history: ChatHistoryItem[] = [];
  if (body.system !== undefined && body.system !== null) history.push({ type: 'system', text: textOf(body.system, 'system') });
  body.messages.forEach((m: unknown, i) => {
    const msg = m as { role?: unknown; content?: unknown } | null;
    const text = textOf(msg?.content, `messages[${i}].content`);
    if (msg?.role === 'user') history.push({ type: 'user', text });
    else if (msg?.role === 'assistant') history.push({ type: 'model', response: [text] });
    else throw invalid(`messages[${i}].role`, 'Messages are `user` or `assistant` (the system prompt is `system`).');
  });
  if (history.at(-1)?.type !== 'model') history.push({ type: 'model', response: [] });
  return history;
}

/** A Responses input_tokens body as a chat history, through the same mapping /v1/responses uses. */
export function responsesHistory(body: Record<string, unknown>): ChatHistoryItem[] {
  refuseTools(body);
  for (const field of ['previous_response_id', 'conversation'] as const) {
    if (body[field] !== undefined && body[field] !== null) throw invalid(field, 'The embedded runtime keeps no stored responses: send the whole conversation in `input`.');
  }
  return parseChatRequest({ messages: chatMessages(body.input, body.instructions) }).history;
}

/**
 * The prompt's tokens. The rendered prompt holds one token more than a generation evaluates (see
 * answerBudget in generate.ts): the count leaves it out, so that it matches the generation's usage.
 */
export function countTokens(model: LoadedModel, history: ChatHistoryItem[]): number {
  const rendered = model.chatWrapper.generateContextState({ chatHistory: history }).contextText.tokenize(model.model.tokenizer).length;
  return Math.max(0, rendered - 1);
}
