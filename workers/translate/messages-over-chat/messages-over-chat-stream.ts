import type { SseEvent } from '../../shared/sse.ts';
import { isRecord, messagesUsageOf, sse, stopReasonOf, str } from '../common.ts';
import type { RequestState, StreamMapper, TranslateContext } from '../types.ts';
import { messagesError } from './messages-over-chat.ts';

// A chat-completions stream (`data: {chunk}` ... `data: [DONE]`) as styleB events: message_start, per block
// content_block_start / content_block_delta / content_block_stop, then message_delta and message_stop.
// A chat stream names its usage only at its end, so message_start reports zero tokens and message_delta
// the whole usage (styleB clients overwrite their counts with message_delta's, never add).
// Reasoning deltas (`reasoning_content`, or OpenRouter's `reasoning`) become a thinking block; text and
// thinking blocks close when another block starts; tool-call blocks, which a chat stream may interleave by
// index, stay open until the stream finishes.

type Json = Record<string, unknown>;

interface Open {
  kind: 'text' | 'thinking';
  index: number;
}

/** The stream's first event, from its first chunk's ID and model. */
function messageStart(chunk: Json): string {
  const message = {
    id: str(chunk.id) ?? '',
    type: 'message',
    role: 'assistant',
    model: str(chunk.model) ?? '',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 },
  };
  return sse('message_start', { type: 'message_start', message });
}

// A stream mapper: one closure holds the stream's state across events; each event's handling is short.
export function messagesStreamOverChat(_ctx: TranslateContext, state: RequestState): StreamMapper {
  let started = false;
  let closed = false;
  let next = 0;
  let current: Open | null = null;
  /** chat tool-call index -> block index, for the open tool_use blocks. */
  const tools = new Map<number, number>();
  let stop: string | null = null;
  let usage: unknown = null;

  const start = (chunk: Json): string => {
    if (started) return '';
    started = true;
    return messageStart(chunk);
  };
  const closeCurrent = (): string => {
    if (current === null) return '';
    const out = sse('content_block_stop', { type: 'content_block_stop', index: current.index });
    current = null;
    return out;
  };
  const open = (kind: Open['kind']): string => {
    if (current?.kind === kind) return '';
    let out = closeCurrent();
    current = { kind, index: next++ };
    const block = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
    out += sse('content_block_start', { type: 'content_block_start', index: current.index, content_block: block });
    return out;
  };
  const delta = (index: number, d: Json): string =>
    sse('content_block_delta', { type: 'content_block_delta', index, delta: d });

  const toolDeltas = (calls: unknown[]): string => {
    let out = '';
    calls.forEach((call: unknown, position) => {
      if (!isRecord(call)) return;
      const key = typeof call.index === 'number' ? call.index : position;
      const fn = isRecord(call.function) ? call.function : {};
      let index = tools.get(key);
      if (index === undefined) {
        out += closeCurrent();
        index = next++;
        tools.set(key, index);
        const name = str(fn.name) ?? '';
        const block = {
          type: 'tool_use',
          id: str(call.id) ?? '',
          name: state.toolNames?.client(name) ?? name,
          input: {},
        };
        out += sse('content_block_start', { type: 'content_block_start', index, content_block: block });
      }
      const args = str(fn.arguments);
      if (args !== null && args !== '') out += delta(index, { type: 'input_json_delta', partial_json: args });
    });
    return out;
  };

  const finish = (): string => {
    if (closed) return '';
    closed = true;
    let out = start({});
    out += closeCurrent();
    for (const index of [...tools.values()].sort((a, b) => a - b))
      out += sse('content_block_stop', { type: 'content_block_stop', index });
    tools.clear();
    out += sse('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stop ?? 'end_turn', stop_sequence: null },
      usage: messagesUsageOf(usage),
    });
    out += sse('message_stop', { type: 'message_stop' });
    return out;
  };

  return {
    push(event: SseEvent): string {
      if (closed) return '';
      if (event.data.trim() === '[DONE]') return finish();
      let chunk: unknown;
      try {
        chunk = JSON.parse(event.data);
      } catch {
        return '';
      }
      if (!isRecord(chunk)) return '';
      if (chunk.error !== undefined) {
        // A failure after the head: styleB's in-stream error event, and nothing after it.
        closed = true;
        return sse('error', messagesError(500, chunk));
      }
      let out = start(chunk);
      if (isRecord(chunk.usage)) usage = chunk.usage;
      const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
      const choice = choices.find((c: unknown) => isRecord(c) && (c.index === 0 || c.index === undefined));
      if (!isRecord(choice)) return out;
      const d = isRecord(choice.delta) ? choice.delta : {};
      const reasoning = str(d.reasoning_content) ?? str(d.reasoning);
      if (reasoning !== null && reasoning !== '')
        out += open('thinking') + delta(current!.index, { type: 'thinking_delta', thinking: reasoning });
      const text = str(d.content) ?? str(d.refusal);
      if (text !== null && text !== '') out += open('text') + delta(current!.index, { type: 'text_delta', text });
      if (Array.isArray(d.tool_calls)) out += toolDeltas(d.tool_calls);
      if (choice.finish_reason !== null && choice.finish_reason !== undefined)
        stop = stopReasonOf(choice.finish_reason);
      return out;
    },
    end: finish,
    closed: () => closed,
  };
}
