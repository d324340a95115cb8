import {
  finishStatus,
  outputText,
  reasoningOf,
  responseEnvelope,
  responsesUsage,
  type ResponsesCallContext,
} from './responses-chat.ts';
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

// A chat completion stream (`data: {chat.completion.chunk}` ... `data: [DONE]`) as the Responses API's
// event stream: response.created and response.in_progress first, then each output item opened
// (output_item.added), filled (text, reasoning or argument deltas) and closed (output_item.done), and
// response.completed (or response.incomplete) with the usage last. Every event is `event: <type>` with a
// data object carrying the same `type` and a `sequence_number` counting from 0.
//
// Output items follow each other: a text message is closed when a tool call starts, as OpenAI orders them.
// Function calls stay open until the stream finishes, since chat may interleave their argument deltas. A call
// of a custom tool streams its input whole when it closes (custom_tool_call_input events): it arrives as JSON
// arguments to decode.

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

interface OpenItem {
  index: number;
  item: Json;
  kind: 'message' | 'reasoning' | 'function_call' | 'custom_tool_call';
  text: string;
}

export interface ResponsesStream {
  /** Chat SSE text (any split); returns the Responses SSE text it completes, possibly empty. */
  push(chunk: string): string;
  /** One chat event's `data` (already parsed out of its SSE block). */
  data(payload: string): string;
  /** The upstream stream ended: whatever closes the response (nothing more if it was already closed). */
  end(): string;
  /** True once response.completed, response.incomplete or response.failed was written. */
  closed(): boolean;
}

/** Chat SSE text, split into lines, each `data:` line's payload handed to `data` (until `done`). */
function sseDataLines(data: (payload: string) => string, done: () => boolean) {
  let pending = '';
  const line = (raw: string) => (raw.startsWith('data:') ? data(raw.slice(5).trim()) : '');
  return {
    push(input: string): string {
      pending += input;
      let out = '';
      let at: number;
      while (!done() && (at = pending.indexOf('\n')) !== -1) {
        const raw = pending.slice(0, at).replace(/\r$/, '');
        pending = pending.slice(at + 1);
        out += line(raw);
      }
      return out;
    },
    /** What is left after the last line break. */
    rest(): string {
      const rest = pending.trim();
      pending = '';
      return rest === '' ? '' : line(rest);
    },
  };
}

function textDone(event: Emit, text: OpenItem, finish: unknown): string {
  return messageDone(event, text.item, text.index, text.text, finishStatus(finish).status === 'incomplete');
}

function reasoningDone(event: Emit, reasoning: OpenItem): string {
  const { index, item } = reasoning;
  item.content = [{ type: 'reasoning_text', text: reasoning.text }];
  return (
    event('response.reasoning_text.done', {
      item_id: item.id,
      output_index: index,
      content_index: 0,
      text: (item.content as Json[])[0]!.text,
    }) + event('response.output_item.done', { output_index: index, item })
  );
}

/** A function call's arguments whole; a custom tool's input, which streams whole when it closes. */
function callDone(event: Emit, call: OpenItem): string {
  if (call.kind === 'custom_tool_call') return customCallDone(event, call.item, call.index, call.text);
  call.item.status = 'completed';
  call.item.arguments = call.text;
  return (
    event('response.function_call_arguments.done', {
      item_id: call.item.id,
      output_index: call.index,
      name: call.item.name,
      arguments: call.text,
    }) + event('response.output_item.done', { output_index: call.index, item: call.item })
  );
}

/** What arrived before a failure stays in the failed response's output, its items left in progress. */
function keepPartial(text: OpenItem | null, reasoning: OpenItem | null, calls: Iterable<OpenItem>): void {
  if (text !== null) text.item.content = [outputText(text.text)];
  if (reasoning !== null) reasoning.item.content = [{ type: 'reasoning_text', text: reasoning.text }];
  for (const call of calls) {
    if (call.kind === 'custom_tool_call') call.item.input = customInput(call.text);
    else call.item.arguments = call.text;
  }
}

/**
 * The response's output items in order: each opened (output_item.added), filled by its deltas, and closed
 * (output_item.done). Text and reasoning follow each other; function calls stay open until the stream finishes.
 */
function outputItems(ctx: ResponsesCallContext, event: Emit, finish: () => unknown) {
  const output: Json[] = [];
  let text: OpenItem | null = null;
  let reasoning: OpenItem | null = null;
  const calls = new Map<number, OpenItem>();
  const tools = ctx.tools ?? new ToolNames();

  function open(kind: OpenItem['kind'], item: Json): OpenItem {
    const open: OpenItem = { index: output.length, item, kind, text: '' };
    output.push(item);
    return open;
  }

  function closeText(): string {
    if (text === null) return '';
    const out = textDone(event, text, finish());
    text = null;
    return out;
  }

  function closeReasoning(): string {
    if (reasoning === null) return '';
    const out = reasoningDone(event, reasoning);
    reasoning = null;
    return out;
  }

  function closeCalls(): string {
    let out = '';
    for (const call of [...calls.values()].sort((a, b) => a.index - b.index)) out += callDone(event, call);
    calls.clear();
    return out;
  }

  function reasoningDelta(delta: string): string {
    let out = closeText();
    if (reasoning === null) {
      reasoning = open('reasoning', { type: 'reasoning', id: ctx.itemId('rs'), summary: [], content: [] });
      out += event('response.output_item.added', { output_index: reasoning.index, item: { ...reasoning.item } });
    }
    reasoning.text += delta;
    return (
      out +
      event('response.reasoning_text.delta', {
        item_id: reasoning.item.id,
        output_index: reasoning.index,
        content_index: 0,
        delta,
      })
    );
  }

  function textDelta(delta: string): string {
    let out = closeReasoning();
    if (text === null) {
      text = open('message', {
        type: 'message',
        id: ctx.itemId('msg'),
        status: 'in_progress',
        role: 'assistant',
        content: [],
      });
      out += messageAdded(event, text.item, text.index);
    }
    text.text += delta;
    return out + textDeltaEvent(event, text.item, text.index, delta);
  }

  function callDelta(call: Json): string {
    const chatIndex = typeof call.index === 'number' ? call.index : calls.size;
    const fn = isObject(call.function) ? call.function : {};
    let out = '';
    let open_ = calls.get(chatIndex);
    if (open_ === undefined) {
      out += closeReasoning() + closeText();
      const tool = tools.client(typeof fn.name === 'string' ? fn.name : '');
      const callId = typeof call.id === 'string' ? call.id : ctx.itemId('call');
      const item = callItem(tool, { id: ctx.itemId(callPrefix(tool)), callId, text: '', status: 'in_progress' });
      open_ = open(tool.kind === 'custom' ? 'custom_tool_call' : 'function_call', item);
      calls.set(chatIndex, open_);
      out += event('response.output_item.added', { output_index: open_.index, item: { ...item } });
    }
    if (typeof fn.arguments === 'string' && fn.arguments !== '') {
      open_.text += fn.arguments;
      if (open_.kind === 'custom_tool_call') return out;
      out += event('response.function_call_arguments.delta', {
        item_id: open_.item.id,
        output_index: open_.index,
        delta: fn.arguments,
      });
    }
    return out;
  }

  return {
    output,
    reasoningDelta,
    textDelta,
    callDelta,
    closeAll: () => closeReasoning() + closeText() + closeCalls(),
    keepPartial: () => keepPartial(text, reasoning, calls.values()),
  };
}

// A stream mapper: one closure holds the stream's state across events; the items are outputItems'.
export function responsesStream(ctx: ResponsesCallContext): ResponsesStream {
  let started = false;
  let done = false;
  let finish: unknown = null;
  let usage: Json | null = null;
  const event = eventWriter();
  const items = outputItems(ctx, event, () => finish);

  function start(): string {
    if (started) return '';
    started = true;
    return responseStarted(event, responseEnvelope(ctx, 'in_progress'));
  }

  function chunk(data: Json): string {
    if (isObject(data.error)) return fail(data.error);
    let out = start();
    if (isObject(data.usage)) usage = responsesUsage(data.usage);
    const choice = Array.isArray(data.choices) ? data.choices[0] : undefined;
    if (!isObject(choice)) return out;
    const delta = isObject(choice.delta) ? choice.delta : {};
    const thought = reasoningOf(delta);
    if (thought !== null) out += items.reasoningDelta(thought);
    if (typeof delta.content === 'string' && delta.content !== '') out += items.textDelta(delta.content);
    if (Array.isArray(delta.tool_calls))
      for (const call of delta.tool_calls) if (isObject(call)) out += items.callDelta(call);
    if (typeof choice.finish_reason === 'string') finish = choice.finish_reason;
    return out;
  }

  function complete(): string {
    if (done) return '';
    done = true;
    let out = start() + items.closeAll();
    const { status, incomplete_details } = finishStatus(finish);
    const response = { ...responseEnvelope(ctx, status), incomplete_details, output: items.output, usage };
    out += event(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
    return out;
  }

  function fail(error: Json): string {
    if (done) return '';
    const message = typeof error.message === 'string' ? error.message : 'The provider reported an error.';
    const code =
      typeof error.code === 'string' ? error.code : typeof error.type === 'string' ? error.type : 'server_error';
    items.keepPartial();
    let out = start();
    out += event('error', { code, message, param: typeof error.param === 'string' ? error.param : null });
    done = true;
    const response = { ...responseEnvelope(ctx, 'failed'), output: items.output, usage, error: { code, message } };
    return out + event('response.failed', { response });
  }

  const lines = sseDataLines(data, () => done);

  function data(payload: string): string {
    if (done) return '';
    // `[DONE]` is a normal end even when a server left out finish_reason.
    if (payload === '[DONE]') return complete();
    let data: unknown;
    try {
      data = JSON.parse(payload);
    } catch {
      return '';
    }
    return isObject(data) ? chunk(data) : '';
  }

  return {
    push: (input) => (done ? '' : lines.push(input)),
    end(): string {
      if (done) return '';
      let out = lines.rest();
      // A stream cut off before its finish_reason is the relay's error to report, not a completed response.
      if (finish !== null) out += complete();
      return out;
    },
    data,
    closed: () => done,
  };
}
