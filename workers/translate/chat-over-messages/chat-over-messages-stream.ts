import type { SseEvent } from '../../shared/sse.ts';
import { chatError } from './chat-over-messages.ts';
import {
  chatUsageOf,
  finishReasonOf,
  isRecord,
  mergeCounts,
  NO_COUNTS,
  sse,
  str,
  type MessagesCounts,
} from '../common.ts';
import type { RequestState, StreamMapper, TranslateContext } from '../types.ts';

// styleB events as a chat-completions stream. Text and thinking deltas become `content` and
// `reasoning_content` deltas; each tool_use block becomes one tool call, numbered in order of appearance,
// its id and name in the first delta and its JSON in `arguments` pieces. message_start and message_delta
// usage merge into one set of counters (later figures replace earlier ones), stated once in a last chunk
// with empty `choices`, and only for a client that asked with `stream_options.include_usage`.

type Json = Record<string, unknown>;

// A stream mapper: one closure holds the stream's state across events; each event's handling is short.
export function chatStreamOverMessages(ctx: TranslateContext, state: RequestState): StreamMapper {
  let closed = false;
  let id = '';
  let model = '';
  const created = ctx.now();
  let counts: MessagesCounts = NO_COUNTS;
  let finish: string | null = null;
  /** block index -> tool call index. */
  const tools = new Map<number, number>();

  const chunk = (delta: Json, finishReason: string | null = null): string => {
    const out: Json = {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    };
    if (state.includeUsage) out.usage = null;
    return sse(null, out);
  };

  const close = (): string => {
    if (closed) return '';
    closed = true;
    let out = chunk({}, finish ?? 'stop');
    if (state.includeUsage)
      out += sse(null, {
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [],
        usage: chatUsageOf(counts),
      });
    return out + sse(null, '[DONE]');
  };

  const onEvent = (type: string, payload: Json): string => {
    switch (type) {
      case 'message_start': {
        const message = isRecord(payload.message) ? payload.message : {};
        id = str(message.id) ?? '';
        model = str(message.model) ?? '';
        counts = mergeCounts(counts, message.usage);
        return chunk({ role: 'assistant', content: '', refusal: null });
      }
      case 'content_block_start': {
        const block = isRecord(payload.content_block) ? payload.content_block : {};
        const index = typeof payload.index === 'number' ? payload.index : -1;
        if (block.type === 'tool_use') {
          const call = tools.size;
          tools.set(index, call);
          return chunk({
            tool_calls: [
              {
                index: call,
                id: str(block.id) ?? '',
                type: 'function',
                function: { name: str(block.name) ?? '', arguments: '' },
              },
            ],
          });
        }
        if (block.type === 'text' && typeof block.text === 'string' && block.text !== '')
          return chunk({ content: block.text });
        return '';
      }
      case 'content_block_delta': {
        const d = isRecord(payload.delta) ? payload.delta : {};
        if (d.type === 'text_delta') return chunk({ content: str(d.text) ?? '' });
        if (d.type === 'thinking_delta') return chunk({ reasoning_content: str(d.thinking) ?? '' });
        if (d.type === 'input_json_delta') {
          const call = tools.get(typeof payload.index === 'number' ? payload.index : -1);
          if (call === undefined) return '';
          return chunk({ tool_calls: [{ index: call, function: { arguments: str(d.partial_json) ?? '' } }] });
        }
        // signature_delta and citations_delta have no chat counterpart.
        return '';
      }
      case 'message_delta': {
        const d = isRecord(payload.delta) ? payload.delta : {};
        finish = finishReasonOf(d.stop_reason) ?? finish;
        counts = mergeCounts(counts, payload.usage);
        return '';
      }
      case 'message_stop':
        return close();
      case 'error': {
        // After the head the status is gone: the error's own type says what failed.
        closed = true;
        return sse(null, chatError(500, payload));
      }
      default:
        // ping, content_block_stop
        return '';
    }
  };

  return {
    push(event: SseEvent): string {
      if (closed) return '';
      let payload: unknown;
      try {
        payload = JSON.parse(event.data);
      } catch {
        return '';
      }
      if (!isRecord(payload)) return '';
      const type = str(payload.type) ?? event.event ?? '';
      return onEvent(type, payload);
    },
    end: close,
    closed: () => closed,
  };
}
