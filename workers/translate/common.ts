import { ServiceError } from '../../protocol/errors.ts';
import { isRecord } from '../shared/shape.ts';
import { cacheCreationSplit } from '../shared/usage-counts.ts';

// Pieces both translation directions share: refusals that name the member, stop reasons, usage, images.

export { isRecord };

const PARAM_MAX = 200;

/** A member the other protocol cannot express: a 400 naming it (bounded: a path can hold client text). */
export function cannot(param: string, message: string, details: Record<string, unknown> = {}): ServiceError {
  return new ServiceError('INVALID_REQUEST', message.slice(0, 500), {
    param: param.slice(0, PARAM_MAX),
    details: { translation: true, ...details },
  });
}

export const num = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;
export const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** styleA finish_reason -> styleB stop_reason. A chat upstream never says which stop sequence matched. */
export function stopReasonOf(finish: unknown): string | null {
  switch (finish) {
    case null:
    case undefined:
      return null;
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

/** styleB stop_reason -> styleA finish_reason. */
export function finishReasonOf(stop: unknown): string | null {
  switch (stop) {
    case null:
    case undefined:
      return null;
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      // end_turn, stop_sequence, pause_turn
      return 'stop';
  }
}

/**
 * Chat usage as styleB reports it. styleB's input_tokens excludes cache reads, chat's prompt_tokens includes
 * them; chat has no cache-write figure and styleB no reasoning figure (reasoning stays in output_tokens).
 */
export function messagesUsageOf(usage: unknown): Record<string, unknown> {
  if (!isRecord(usage)) return { input_tokens: 0, output_tokens: 0 };
  const prompt = num(usage.prompt_tokens) ?? 0;
  const details = isRecord(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const cached = Math.min(prompt, num(details.cached_tokens) ?? 0);
  const out: Record<string, unknown> = {
    input_tokens: prompt - cached,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
    output_tokens: num(usage.completion_tokens) ?? 0,
  };
  const reasoning = isRecord(usage.completion_tokens_details)
    ? num(usage.completion_tokens_details.reasoning_tokens)
    : null;
  if (reasoning !== null) out.output_tokens_details = { thinking_tokens: reasoning };
  return out;
}

/** Counters of styleB usage, as read from message_start (then message_delta, whose figures replace them). */
export interface MessagesCounts {
  input: number;
  cacheCreation: number;
  cacheRead: number;
  output: number;
  /** Of the output, spent thinking (`output_tokens_details.thinking_tokens`); null when not reported. */
  thinking: number | null;
}

export const NO_COUNTS: MessagesCounts = Object.freeze({
  input: 0,
  cacheCreation: 0,
  cacheRead: 0,
  output: 0,
  thinking: null,
});

/** styleB's usage is cumulative: a later report's figures replace the earlier ones, never add to them. */
export function mergeCounts(counts: MessagesCounts, usage: unknown): MessagesCounts {
  if (!isRecord(usage)) return counts;
  return {
    input: num(usage.input_tokens) ?? counts.input,
    cacheCreation:
      num(usage.cache_creation_input_tokens) ?? cacheCreationSplit(usage.cache_creation)?.total ?? counts.cacheCreation,
    cacheRead: num(usage.cache_read_input_tokens) ?? counts.cacheRead,
    output: num(usage.output_tokens) ?? counts.output,
    thinking:
      (isRecord(usage.output_tokens_details) ? num(usage.output_tokens_details.thinking_tokens) : null) ??
      counts.thinking,
  };
}

/** styleB counters as chat usage: prompt_tokens holds every input token, cache reads and writes included. */
export function chatUsageOf(c: MessagesCounts): Record<string, unknown> {
  const prompt = c.input + c.cacheCreation + c.cacheRead;
  const usage: Record<string, unknown> = {
    prompt_tokens: prompt,
    completion_tokens: c.output,
    total_tokens: prompt + c.output,
    prompt_tokens_details: { cached_tokens: c.cacheRead },
  };
  if (c.thinking !== null) usage.completion_tokens_details = { reasoning_tokens: c.thinking };
  return usage;
}

const DATA_URL = /^data:([a-z]+\/[a-z0-9.+-]+);base64,/i;

/** A chat image URL as a styleB image source: a base64 data URL is inlined, anything else stays a URL. */
export function imageSourceOf(url: string, param: string): Record<string, string> {
  if (url.startsWith('data:')) {
    const m = DATA_URL.exec(url);
    if (m === null) throw cannot(param, 'Only base64 `data:` image URLs can be translated.');
    return { type: 'base64', media_type: m[1]!.toLowerCase(), data: url.slice(m[0].length) };
  }
  return { type: 'url', url };
}

/** A styleB image source as a chat image URL. */
export function imageUrlOf(source: unknown, param: string): string {
  if (isRecord(source)) {
    if (source.type === 'base64' && typeof source.media_type === 'string' && typeof source.data === 'string')
      return `data:${source.media_type};base64,${source.data}`;
    if (source.type === 'url' && typeof source.url === 'string') return source.url;
  }
  throw cannot(param, 'Only base64 and URL image sources can be translated.');
}

/** Tool arguments as JSON text -> the object styleB wants; text that is not an object is refused. */
export function argumentsObject(text: unknown, param: string): Record<string, unknown> {
  if (typeof text !== 'string' || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw cannot(param, 'Tool call arguments must be a JSON object to be translated.');
  }
  if (!isRecord(parsed)) throw cannot(param, 'Tool call arguments must be a JSON object to be translated.');
  return parsed;
}

/** A model's tool arguments, leniently: an answer is never refused for what the model wrote. */
export function lenientArguments(text: unknown): Record<string, unknown> {
  if (typeof text !== 'string' || text.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return isRecord(parsed) ? parsed : { value: parsed };
  } catch {
    return {};
  }
}

/** The text of a content that is a string or an array of text parts. */
export function textOf(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (!Array.isArray(content)) throw cannot(param, 'Content must be a string or an array of text parts.');
  return content
    .map((part: unknown, i) => {
      if (isRecord(part) && part.type === 'text' && typeof part.text === 'string') return part.text;
      throw cannot(`${param}[${i}]`, 'Only text parts can be translated here.');
    })
    .join('');
}

/** One SSE event as text. */
export function sse(event: string | null, data: unknown): string {
  const json = typeof data === 'string' ? data : JSON.stringify(data);
  return event === null ? `data: ${json}\n\n` : `event: ${event}\ndata: ${json}\n\n`;
}
