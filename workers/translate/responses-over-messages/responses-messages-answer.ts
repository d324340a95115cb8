import { isRecord, mergeCounts, NO_COUNTS, str, type MessagesCounts } from '../common.ts';
import { outputText, responseEnvelope, type ResponsesCallContext } from '../responses-over-chat/responses-chat.ts';
import { callItem, callPrefix, ToolNames } from '../responses-tools.ts';
import { REDACTED_PREFIX } from './responses-messages-input.ts';
import { isSearchCall, searchItem, searchQuery, settleSearch } from './responses-messages-search.ts';

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

/** A tool_use block as the client's call of its tool: a (namespaced) function call or a custom tool call. */
export function toolCallItem(block: Json, ctx: ResponsesCallContext): Json {
  const tool = (ctx.tools ?? new ToolNames()).client(str(block.name) ?? '');
  return callItem(tool, {
    id: ctx.itemId(callPrefix(tool)),
    callId: str(block.id) ?? ctx.itemId('call'),
    text: argumentsText(block.input),
    status: 'completed',
  });
}

const emptyMessage = (ctx: ResponsesCallContext, status: string): Json => ({
  type: 'message',
  id: ctx.itemId('msg'),
  status: status === 'incomplete' ? 'incomplete' : 'completed',
  role: 'assistant',
  content: [outputText('')],
});

/**
 * A Messages `message` as a `response` object. Consecutive text blocks make one message item; thinking
 * blocks become reasoning items, tool_use blocks function or custom tool calls, and web search blocks
 * web_search_call items, in the order the model wrote them. Never throws: the call is metered by then.
 */
export function messageToResponse(answer: unknown, ctx: ResponsesCallContext): Json {
  const message = isRecord(answer) ? answer : {};
  const { status, incomplete_details } = stopStatus(message.stop_reason);
  const output: Json[] = [];
  const searches = new Map<string, Json>();
  let text: Json | null = null;
  for (const block of Array.isArray(message.content) ? (message.content as unknown[]) : []) {
    if (!isRecord(block)) continue;
    if (block.type === 'text') {
      if (text === null) output.push((text = emptyMessage(ctx, status)));
      const part = (text.content as Json[])[0]!;
      part.text = `${part.text as string}${str(block.text) ?? ''}`;
      continue;
    }
    text = null;
    if (block.type === 'thinking')
      output.push(reasoningItem(ctx.itemId('rs'), str(block.thinking) ?? '', str(block.signature)));
    else if (block.type === 'redacted_thinking') output.push(redactedItem(ctx.itemId('rs'), str(block.data) ?? ''));
    else if (block.type === 'tool_use') output.push(toolCallItem(block, ctx));
    else if (isSearchCall(block)) {
      // A search whose result never came (the turn paused) is reported as run.
      const item = searchItem(ctx.itemId('ws'), searchQuery(block.input), 'completed');
      searches.set(str(block.id) ?? '', item);
      output.push(item);
    } else if (block.type === 'web_search_tool_result') {
      const item = searches.get(str(block.tool_use_id) ?? '');
      if (item !== undefined) settleSearch(item, block);
    }
    // Other server tool blocks are never asked for: the request offers no other server tool.
  }
  if (output.length === 0) output.push(emptyMessage(ctx, status));
  return {
    ...envelope(ctx, status),
    incomplete_details,
    output,
    usage: usageOf(mergeCounts(NO_COUNTS, message.usage)),
  };
}
