import type { SseEvent } from '../../shared/sse.ts';
import { isRecord, mergeCounts, NO_COUNTS, str, type MessagesCounts } from '../common.ts';
import type { StreamMapper } from '../types.ts';
import { outputText, type ResponsesCallContext } from '../responses-over-chat/responses-chat.ts';
import { callItem, callPrefix, customInput, ToolNames } from '../responses-tools.ts';
import {
  customCallDone,
  type Emit,
  eventWriter,
  messageAdded,
  messageDone,
  responseStarted,
  textDeltaEvent,
} from '../responses-events.ts';
import {
  argumentsText,
  envelope,
  reasoningItem,
  redactedItem,
  stopStatus,
  usageOf,
} from './responses-messages-answer.ts';
import { isSearchCall, searchItem, searchQuery, settleSearch } from './responses-messages-search.ts';

// A Messages event stream as the Responses API's: response.created and response.in_progress at
// message_start; per content block an output item opened (output_item.added), filled and closed
// (output_item.done): text as content_part / output_text events, thinking as reasoning_summary_part /
// reasoning_summary_text events (its signature kept for encrypted_content), tool_use as
// function_call_arguments events (a custom tool's input as custom_tool_call_input events, whole when the
// call ends: it arrives as JSON to decode), Anthropic's web search as web_search_call events (in_progress at
// its start, searching when its query is written, completed when its result block arrives);
// response.completed (or response.incomplete) with the usage at message_stop. Every event is
// `event: <type>` with the same `type` and a `sequence_number` counting from 0.
//
// Consecutive text blocks share one message item, as the whole answer does (responses-messages-answer.ts):
// the message closes when another block starts or the message ends. Blocks never interleave in Messages.

type Json = Record<string, unknown>;

interface Open {
  index: number;
  item: Json;
  text: string;
  signature: string;
}

/** Anthropic error types as the codes Responses clients act on (retrying a rate limit or a server error). */
const FAILURE_CODES: Record<string, string> = {
  rate_limit_error: 'rate_limit_exceeded',
  invalid_request_error: 'invalid_prompt',
};

function summaryDelta(event: Emit, open_: Open, delta: string): string {
  if (delta === '') return '';
  open_.text += delta;
  return event('response.reasoning_summary_text.delta', {
    item_id: open_.item.id,
    output_index: open_.index,
    summary_index: 0,
    delta,
  });
}

function argumentsDelta(event: Emit, open_: Open, delta: string): string {
  if (delta === '') return '';
  open_.text += delta;
  return event('response.function_call_arguments.delta', {
    item_id: open_.item.id,
    output_index: open_.index,
    delta,
  });
}

/** The search's result (or the stream's end without one): the item is done. */
function searchDone(event: Emit, search: Open, result: Json | null): string {
  const { index, item } = search;
  if (result === null) item.status = 'completed';
  else settleSearch(item, result);
  const at = { output_index: index, item_id: item.id };
  return (
    (item.status === 'completed' ? event('response.web_search_call.completed', at) : '') +
    event('response.output_item.done', { output_index: index, item })
  );
}

/** A search's result block: the search it answers is done. */
function searchResult(event: Emit, searches: Map<string, Open>, result: Json): string {
  const id = str(result.tool_use_id) ?? '';
  const search = searches.get(id);
  if (search === undefined) return '';
  searches.delete(id);
  return searchDone(event, search, result);
}

/** A reasoning item opened, with its one summary part. */
function reasoningAdded(event: Emit, block: Open): string {
  return (
    event('response.output_item.added', { output_index: block.index, item: { ...block.item, summary: [] } }) +
    event('response.reasoning_summary_part.added', {
      item_id: block.item.id,
      output_index: block.index,
      summary_index: 0,
      part: { type: 'summary_text', text: '' },
    })
  );
}

/** An item whole at once (redacted thinking): added and done. */
function addedDone(event: Emit, item: Json, index: number): string {
  return (
    event('response.output_item.added', { output_index: index, item }) +
    event('response.output_item.done', { output_index: index, item })
  );
}

function reasoningClosed(event: Emit, closing: Open): string {
  const { index, item } = closing;
  Object.assign(item, reasoningItem(item.id as string, closing.text, closing.signature));
  const at = { item_id: item.id, output_index: index, summary_index: 0 };
  return (
    event('response.reasoning_summary_text.done', { ...at, text: closing.text }) +
    event('response.reasoning_summary_part.done', { ...at, part: { type: 'summary_text', text: closing.text } }) +
    event('response.output_item.done', { output_index: index, item })
  );
}

function callClosed(event: Emit, closing: Open): string {
  const { index, item } = closing;
  // A call without parameters streams no input: `{}` parses, as the whole answer's does, and the deltas
  // still add up to the final arguments.
  const filler = closing.text === '' ? argumentsDelta(event, closing, '{}') : '';
  item.arguments = closing.text;
  item.status = 'completed';
  return (
    filler +
    event('response.function_call_arguments.done', {
      item_id: item.id,
      output_index: index,
      name: item.name,
      arguments: item.arguments,
    }) +
    event('response.output_item.done', { output_index: index, item })
  );
}

/** What arrived before a failure stays in the failed response's output, its items left in progress. */
function keepPartial(message: Open | null, block: Open | null): void {
  if (message !== null) message.item.content = [outputText(message.text)];
  if (block !== null && block.item.type === 'function_call') block.item.arguments = block.text;
  if (block !== null && block.item.type === 'custom_tool_call') block.item.input = customInput(block.text);
  if (block !== null && block.item.type === 'reasoning')
    Object.assign(block.item, reasoningItem(block.item.id as string, block.text, null));
}

/**
 * The response's output items, one per content block (consecutive text blocks share one message item): each
 * opened, filled by its deltas and closed; a web search stays open until its result block arrives.
 */
function outputBlocks(ctx: ResponsesCallContext, event: Emit, stopOf: () => unknown) {
  const output: Json[] = [];
  let message: Open | null = null;
  /** The open thinking, tool_use or server_tool_use block. */
  let block: Open | null = null;
  /** Web searches whose result block has not come yet, by their server_tool_use ID. */
  const searches = new Map<string, Open>();
  const tools = ctx.tools ?? new ToolNames();

  function open(item: Json): Open {
    const opened: Open = { index: output.length, item, text: '', signature: '' };
    output.push(item);
    return opened;
  }

  function closeMessage(): string {
    if (message === null) return '';
    const { index, item, text } = message;
    message = null;
    return messageDone(event, item, index, text, stopStatus(stopOf()).status === 'incomplete');
  }

  function textDelta(delta: string): string {
    let out = '';
    if (message === null) {
      message = open({ type: 'message', id: ctx.itemId('msg'), status: 'in_progress', role: 'assistant', content: [] });
      out += messageAdded(event, message.item, message.index);
    }
    if (delta === '') return out;
    message.text += delta;
    return out + textDeltaEvent(event, message.item, message.index, delta);
  }

  function blockStart(start_: Json): string {
    if (start_.type === 'text') return textDelta(str(start_.text) ?? '');
    let out = closeMessage();
    if (start_.type === 'thinking') {
      block = open({ type: 'reasoning', id: ctx.itemId('rs'), summary: [] });
      block.signature = str(start_.signature) ?? '';
      return out + reasoningAdded(event, block) + summaryDelta(event, block, str(start_.thinking) ?? '');
    }
    if (start_.type === 'redacted_thinking') {
      const item = redactedItem(ctx.itemId('rs'), str(start_.data) ?? '');
      const { index } = open(item);
      return out + addedDone(event, item, index);
    }
    if (start_.type === 'tool_use') {
      const tool = tools.client(str(start_.name) ?? '');
      const callId = str(start_.id) ?? ctx.itemId('call');
      block = open(callItem(tool, { id: ctx.itemId(callPrefix(tool)), callId, text: '', status: 'in_progress' }));
      out += event('response.output_item.added', { output_index: block.index, item: { ...block.item } });
      // Streamed tool input arrives as deltas after an empty `input`; a filled one is the whole of it.
      if (isRecord(start_.input) && Object.keys(start_.input).length > 0)
        out += argumentsDelta(event, block, argumentsText(start_.input));
      return out;
    }
    if (isSearchCall(start_)) return out + searchStart(start_);
    if (start_.type === 'web_search_tool_result') return out + searchResult(event, searches, start_);
    // Other server tool blocks are never asked for (no other server tool is offered).
    return out;
  }

  function searchStart(start_: Json): string {
    block = open(searchItem(ctx.itemId('ws'), null, 'in_progress'));
    searches.set(str(start_.id) ?? '', block);
    if (isRecord(start_.input) && Object.keys(start_.input).length > 0) block.text = JSON.stringify(start_.input);
    const at = { output_index: block.index, item_id: block.item.id };
    return (
      event('response.output_item.added', { output_index: block.index, item: { ...block.item } }) +
      event('response.web_search_call.in_progress', at)
    );
  }

  function blockStop(): string {
    const closing = block;
    if (closing === null) return '';
    block = null;
    const { index, item } = closing;
    if (item.type === 'web_search_call') {
      item.action = { type: 'search', query: searchQuery(closing.text) };
      return event('response.web_search_call.searching', { output_index: index, item_id: item.id });
    }
    if (item.type === 'custom_tool_call') return customCallDone(event, item, index, closing.text);
    if (item.type === 'reasoning') return reasoningClosed(event, closing);
    return callClosed(event, closing);
  }

  function blockDelta(delta: Json): string {
    if (delta.type === 'text_delta') return textDelta(str(delta.text) ?? '');
    if (block === null) return '';
    if (delta.type === 'thinking_delta' && block.item.type === 'reasoning')
      return summaryDelta(event, block, str(delta.thinking) ?? '');
    if (delta.type === 'signature_delta' && block.item.type === 'reasoning')
      block.signature += str(delta.signature) ?? '';
    else if (delta.type === 'input_json_delta' && block.item.type === 'function_call')
      return argumentsDelta(event, block, str(delta.partial_json) ?? '');
    // A custom tool's input and a search's query are JSON to decode once whole.
    else if (delta.type === 'input_json_delta') block.text += str(delta.partial_json) ?? '';
    // citations_delta: Responses annotations are not built from Messages citations.
    return '';
  }

  return {
    output,
    blockStart,
    blockDelta,
    blockStop,
    /** The stream's end: the open block, the message, and every search without its result. */
    closeAll(): string {
      let out = blockStop() + closeMessage();
      for (const search of searches.values()) out += searchDone(event, search, null);
      searches.clear();
      return out;
    },
    keepPartial: () => keepPartial(message, block),
  };
}

// A stream mapper: one closure holds the stream's state across events; the items are outputBlocks'.
export function responsesStreamOverMessages(ctx: ResponsesCallContext): StreamMapper {
  let started = false;
  let done = false;
  let counts: MessagesCounts = NO_COUNTS;
  let stop: unknown = null;
  const event = eventWriter();
  const blocks = outputBlocks(ctx, event, () => stop);

  function start(): string {
    if (started) return '';
    started = true;
    return responseStarted(event, envelope(ctx, 'in_progress'));
  }

  function complete(): string {
    if (done) return '';
    done = true;
    const out = start() + blocks.closeAll();
    const { status, incomplete_details } = stopStatus(stop);
    const response = { ...envelope(ctx, status), incomplete_details, output: blocks.output, usage: usageOf(counts) };
    return out + event(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
  }

  function fail(payload: Json): string {
    if (done) return '';
    done = true;
    const error = isRecord(payload.error) ? payload.error : {};
    const type = str(error.type) ?? 'api_error';
    const message_ = str(error.message) ?? 'The provider reported an error.';
    const code = FAILURE_CODES[type] ?? 'server_error';
    blocks.keepPartial();
    const failure = { code, message: message_ };
    const response = { ...envelope(ctx, 'failed'), output: blocks.output, usage: usageOf(counts), error: failure };
    return start() + event('error', { code, message: message_, param: null }) + event('response.failed', { response });
  }

  function onEvent(type: string, payload: Json): string {
    switch (type) {
      case 'message_start':
        counts = mergeCounts(counts, isRecord(payload.message) ? payload.message.usage : undefined);
        return start();
      case 'content_block_start':
        return start() + blocks.blockStart(isRecord(payload.content_block) ? payload.content_block : {});
      case 'content_block_delta':
        return start() + blocks.blockDelta(isRecord(payload.delta) ? payload.delta : {});
      case 'content_block_stop':
        return blocks.blockStop();
      case 'message_delta':
        stop = (isRecord(payload.delta) ? payload.delta.stop_reason : null) ?? stop;
        counts = mergeCounts(counts, payload.usage);
        return '';
      case 'message_stop':
        return complete();
      case 'error':
        return fail(payload);
      default:
        // ping
        return '';
    }
  }

  return {
    push(sseEvent: SseEvent): string {
      if (done) return '';
      let payload: unknown;
      try {
        payload = JSON.parse(sseEvent.data);
      } catch {
        return '';
      }
      if (!isRecord(payload)) return '';
      return onEvent(str(payload.type) ?? sseEvent.event ?? '', payload);
    },
    // A stream cut off before its stop_reason is the relay's error to report, not a completed response.
    end: () => (done || stop === null ? '' : complete()),
    closed: () => done,
  };
}
