import { isRecord, mergeCounts, NO_COUNTS, str, type MessagesCounts } from '../common.ts';
import { outputText, responseEnvelope, type ResponsesCallContext } from '../responses-over-chat/responses-chat.ts';
import { REDACTED_PREFIX } from './responses-messages.ts';

// A Messages answer as a `response` object (the Responses API over Messages; the request half is
// responses-messages.ts). Shared with the stream half: usage, status and the envelope's echo.

type Json = Record<string, unknown>;

/**
 * Messages usage in the Responses shape. Responses' input_tokens holds every input token, where Messages
 * reports cache reads and writes apart; both are restated as its details (`cached_tokens`,
 * `cache_write_tokens`). Reasoning tokens are Messages' thinking_tokens when reported, else 0.
 */
export function usageOf(c: MessagesCounts): Json {
  const input = c.input + c.cacheCreation + c.cacheRead;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: c.cacheRead, cache_write_tokens: c.cacheCreation },
    output_tokens: c.output,
    output_tokens_details: { reasoning_tokens: c.thinking ?? 0 },
    total_tokens: input + c.output,
  };
}

/** Status and incomplete_details from a Messages stop_reason. */
export function stopStatus(stop: unknown): { status: string; incomplete_details: Json | null } {
  if (stop === 'max_tokens' || stop === 'model_context_window_exceeded')
    return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (stop === 'refusal') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

/** The envelope, echoing `reasoning` too: unlike chat, Messages honours it (as a thinking budget). */
export function envelope(ctx: ResponsesCallContext, status: string): Json {
  const reasoning = ctx.request.reasoning;
  const echo = isRecord(reasoning) ? { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null } : null;
  return { ...responseEnvelope(ctx, status), reasoning: echo };
}

/** A thinking (or redacted_thinking) block as a reasoning item: the text as its summary, the signature kept. */
export function reasoningItem(id: string, text: string, signature: string | null): Json {
  const item: Json = { type: 'reasoning', id, summary: text === '' ? [] : [{ type: 'summary_text', text }] };
  if (signature !== null && signature !== '') item.encrypted_content = signature;
  return item;
}

export const redactedItem = (id: string, data: string): Json => reasoningItem(id, '', `${REDACTED_PREFIX}${data}`);

/** A tool_use input as `arguments` text; an empty input is `{}`, which every client parses. */
export const argumentsText = (input: unknown): string => JSON.stringify(isRecord(input) ? input : {});

/**
 * A Messages `message` as a `response` object. Consecutive text blocks make one message item; thinking
 * blocks become reasoning items and tool_use blocks function calls, in the order the model wrote them.
 * Never throws: the call is metered by then.
 */
export function messageToResponse(answer: unknown, ctx: ResponsesCallContext): Json {
  const message = isRecord(answer) ? answer : {};
  const { status, incomplete_details } = stopStatus(message.stop_reason);
  const output: Json[] = [];
  let text: Json | null = null;
  for (const block of Array.isArray(message.content) ? (message.content as unknown[]) : []) {
    if (!isRecord(block)) continue;
    if (block.type === 'text') {
      if (text === null) {
        text = {
          type: 'message',
          id: ctx.itemId('msg'),
          status: status === 'incomplete' ? 'incomplete' : 'completed',
          role: 'assistant',
          content: [outputText('')],
        };
        output.push(text);
      }
      const part = (text.content as Json[])[0]!;
      part.text = `${part.text as string}${str(block.text) ?? ''}`;
      continue;
    }
    text = null;
    if (block.type === 'thinking')
      output.push(reasoningItem(ctx.itemId('rs'), str(block.thinking) ?? '', str(block.signature)));
    else if (block.type === 'redacted_thinking') output.push(redactedItem(ctx.itemId('rs'), str(block.data) ?? ''));
    else if (block.type === 'tool_use') {
      output.push({
        type: 'function_call',
        id: ctx.itemId('fc'),
        call_id: str(block.id) ?? ctx.itemId('call'),
        name: str(block.name) ?? '',
        arguments: argumentsText(block.input),
        status: 'completed',
      });
    }
    // Server tool blocks (web search...) are never asked for: the request offers function tools only.
  }
  if (output.length === 0)
    output.push({
      type: 'message',
      id: ctx.itemId('msg'),
      status: status === 'incomplete' ? 'incomplete' : 'completed',
      role: 'assistant',
      content: [outputText('')],
    });
  return {
    ...envelope(ctx, status),
    incomplete_details,
    output,
    usage: usageOf(mergeCounts(NO_COUNTS, message.usage)),
  };
}
