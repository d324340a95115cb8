import type { GatewayOp } from '../../../../protocol/gateway.ts';
import type { ProviderKind } from '../../../../protocol/providers.ts';
import { createUsageCollector, type UsageResult } from '../../../../workers/proxy/usage/collectors.ts';
import { createSseParser } from '../../../../workers/shared/sse.ts';

// Streams and bodies in the shapes the providers' API references document, built here so that each test
// can vary one thing (line ends, the injected usage, a split point) and keep the rest exact.

export type LineEnd = '\n' | '\r\n' | '\r';

export interface Frame {
  event?: string;
  data: string;
}

/** One SSE frame per entry; a string entry is written as a comment line. */
export function sse(frames: readonly (Frame | string)[], eol: LineEnd = '\n'): string {
  return frames
    .map((f) =>
      typeof f === 'string'
        ? `: ${f}${eol}${eol}`
        : `${f.event === undefined ? '' : `event: ${f.event}${eol}`}data: ${f.data}${eol}${eol}`,
    )
    .join('');
}

export const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
export const text = (data: Uint8Array): string => new TextDecoder().decode(data);

/** Every way to cut the bytes in two, then the bytes one at a time. */
export function* cuts(data: Uint8Array): Generator<{ label: string; chunks: Uint8Array[] }> {
  for (let i = 0; i <= data.length; i++)
    yield { label: `cut at ${i}`, chunks: [data.subarray(0, i), data.subarray(i)] };
  yield { label: 'byte by byte', chunks: Array.from(data, (_, i) => data.subarray(i, i + 1)) };
}

/** Feeds a stream's text to a collector the way the relay does: parsed events, in order. */
export function collectStream(op: GatewayOp, stream: string, providerKind?: ProviderKind): UsageResult {
  const collector = createUsageCollector(op, providerKind === undefined ? {} : { providerKind });
  const parser = createSseParser();
  for (const ev of [...parser.push(stream), ...parser.end()]) collector.event(ev);
  return collector.result();
}

export function collectJson(op: GatewayOp, body: unknown, providerKind?: ProviderKind): UsageResult {
  const collector = createUsageCollector(op, providerKind === undefined ? {} : { providerKind });
  collector.json(body);
  return collector.result();
}

// ---- styleA Chat Completions -------------------------------------------------------------------------

const CHUNK_BASE = {
  id: 'chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG',
  object: 'chat.completion.chunk',
  created: 1741570283,
  model: 'gpt-4o-2024-08-06',
  service_tier: 'default',
  system_fingerprint: 'fp_eb9dce56a8',
};

export const CHAT_USAGE = {
  prompt_tokens: 82,
  completion_tokens: 48,
  total_tokens: 130,
  prompt_tokens_details: { cached_tokens: 64, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: 16,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0,
  },
};

const toolDelta = (index: number, fields: Record<string, unknown>) => ({
  index: 0,
  delta: { tool_calls: [{ index, ...fields }] },
  logprobs: null,
  finish_reason: null,
});

/** Two parallel function calls, as OpenAI streams them: name and id once, then argument fragments. */
export const TOOL_CHOICES: unknown[][] = [
  [
    {
      index: 0,
      delta: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            index: 0,
            id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA',
            type: 'function',
            function: { name: 'get_weather', arguments: '' },
          },
        ],
        refusal: null,
      },
      logprobs: null,
      finish_reason: null,
    },
  ],
  [toolDelta(0, { function: { arguments: '{"lo' } })],
  [toolDelta(0, { function: { arguments: 'cation": "Paris, France"}' } })],
  [toolDelta(1, { id: 'call_ABCxyz', type: 'function', function: { name: 'get_time', arguments: '' } })],
  [toolDelta(1, { function: { arguments: '{"timezone": "Europe/Paris", "name": "x"}' } })],
  [{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }],
];

/** A text answer with multi-byte characters (two- to four-byte UTF-8) split over deltas. */
export const TEXT_CHOICES: unknown[][] = [
  [{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }],
  ...['Grüße ', 'aus 東京 ', '🌸 — ', '"quoted" usage'].map((content) => [
    { index: 0, delta: { content }, logprobs: null, finish_reason: null },
  ]),
  [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }],
];

export interface ChatStreamOptions {
  /**
   * As the upstream answers with `stream_options.include_usage`: `"usage":null` on each chunk, then the usage chunk.
   */
  includeUsage: boolean;
  choices?: unknown[][];
  usage?: Record<string, unknown>;
  eol?: LineEnd;
  /** Where `"usage":null` sits in each chunk (OpenAI writes it last). */
  usageFirst?: boolean;
  base?: Record<string, unknown>;
  /** SSE comments before the first chunk (OpenRouter's keep-alive). */
  comments?: string[];
}

export function chatStream(options: ChatStreamOptions): string {
  const base = options.base ?? CHUNK_BASE;
  const frames: (Frame | string)[] = [...(options.comments ?? [])];
  for (const choices of options.choices ?? TOOL_CHOICES) {
    const chunk = !options.includeUsage
      ? { ...base, choices }
      : options.usageFirst
        ? { usage: null, ...base, choices }
        : { ...base, choices, usage: null };
    frames.push({ data: JSON.stringify(chunk) });
  }
  if (options.includeUsage)
    frames.push({ data: JSON.stringify({ ...base, choices: [], usage: options.usage ?? CHAT_USAGE }) });
  frames.push({ data: '[DONE]' });
  return sse(frames, options.eol);
}

export const OPENROUTER_BASE = {
  id: 'gen-1741570283-Xyz',
  provider: 'OpenAI',
  model: 'openai/gpt-4o',
  object: 'chat.completion.chunk',
  created: 1741570283,
};

export const OPENROUTER_USAGE = {
  prompt_tokens: 194,
  completion_tokens: 2,
  total_tokens: 196,
  cost: 0.000495,
  is_byok: false,
  prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 100, audio_tokens: 0 },
  cost_details: { upstream_inference_cost: null },
  completion_tokens_details: { reasoning_tokens: 0 },
};

// ---- styleA Responses --------------------------------------------------------------------------------

export const RESPONSES_USAGE = {
  input_tokens: 328,
  input_tokens_details: { cached_tokens: 128 },
  output_tokens: 52,
  output_tokens_details: { reasoning_tokens: 32 },
  total_tokens: 380,
};

const RESPONSE_BASE = {
  id: 'resp_67ccd2bed1ec8190b14f964abc054267',
  object: 'response',
  created_at: 1741476542,
  model: 'gpt-5-2025-08-07',
};

export const FUNCTION_CALL_ITEM = {
  id: 'fc_12345xyz',
  type: 'function_call',
  status: 'completed',
  arguments: '{"location":"Paris, France"}',
  call_id: 'call_12345xyz',
  name: 'get_weather',
};

export const WEB_SEARCH_ITEM = {
  id: 'ws_67c9fa0502748190b7dd390736892e100be649c1a5ff9609',
  type: 'web_search_call',
  status: 'completed',
};

export function responsesStream(
  options: {
    terminal?: 'response.completed' | 'response.incomplete' | 'response.failed' | null;
    withEventLines?: boolean;
  } = {},
): string {
  const terminal = options.terminal === undefined ? 'response.completed' : options.terminal;
  const reasoning = { id: 'rs_1', type: 'reasoning', summary: [] };
  const message = {
    id: 'msg_1',
    type: 'message',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: 'Checking — 🌦 "function_call"', annotations: [] }],
  };
  const started = { ...FUNCTION_CALL_ITEM, status: 'in_progress', arguments: '' };
  let seq = 0;
  const frame = (type: string, rest: Record<string, unknown>): Frame => {
    const data = JSON.stringify({ type, sequence_number: seq++, ...rest });
    return options.withEventLines === false ? { data } : { event: type, data };
  };
  const frames: Frame[] = [
    frame('response.created', { response: { ...RESPONSE_BASE, status: 'in_progress', output: [], usage: null } }),
    frame('response.in_progress', { response: { ...RESPONSE_BASE, status: 'in_progress', output: [], usage: null } }),
    frame('response.output_item.added', { output_index: 0, item: reasoning }),
    frame('response.output_item.done', { output_index: 0, item: reasoning }),
    frame('response.output_item.added', { output_index: 1, item: { ...message, status: 'in_progress', content: [] } }),
    frame('response.output_text.delta', {
      item_id: 'msg_1',
      output_index: 1,
      content_index: 0,
      delta: 'Checking — 🌦 "function_call"',
    }),
    frame('response.output_item.done', { output_index: 1, item: message }),
    frame('response.output_item.added', { output_index: 2, item: started }),
    frame('response.function_call_arguments.delta', { item_id: 'fc_12345xyz', output_index: 2, delta: '{"location":' }),
    frame('response.function_call_arguments.delta', {
      item_id: 'fc_12345xyz',
      output_index: 2,
      delta: '"Paris, France"}',
    }),
    frame('response.function_call_arguments.done', {
      item_id: 'fc_12345xyz',
      output_index: 2,
      arguments: FUNCTION_CALL_ITEM.arguments,
    }),
    frame('response.output_item.done', { output_index: 2, item: FUNCTION_CALL_ITEM }),
    frame('response.output_item.added', { output_index: 3, item: { ...WEB_SEARCH_ITEM, status: 'in_progress' } }),
    frame('response.web_search_call.completed', { output_index: 3, item_id: WEB_SEARCH_ITEM.id }),
    frame('response.output_item.done', { output_index: 3, item: WEB_SEARCH_ITEM }),
  ];
  if (terminal !== null) {
    const status = terminal.slice('response.'.length);
    frames.push(
      frame(terminal, {
        response: {
          ...RESPONSE_BASE,
          status,
          output: [reasoning, message, FUNCTION_CALL_ITEM, WEB_SEARCH_ITEM],
          usage: RESPONSES_USAGE,
        },
      }),
    );
  }
  return sse(frames);
}

// ---- styleB Messages ---------------------------------------------------------------------------------

export function messagesStream(
  options: { deltaUsage?: Record<string, unknown>; withEventLines?: boolean; eol?: LineEnd } = {},
): string {
  const frame = (type: string, body: Record<string, unknown>): Frame => {
    const data = JSON.stringify({ type, ...body });
    return options.withEventLines === false ? { data } : { event: type, data };
  };
  const frames: Frame[] = [
    frame('message_start', {
      message: {
        id: 'msg_014p7gG3wDgGV9EUtLvnow3U',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5-20250929',
        stop_sequence: null,
        usage: { input_tokens: 472, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000, output_tokens: 2 },
        content: [],
        stop_reason: null,
      },
    }),
    frame('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    { event: 'ping', data: '{"type": "ping"}' },
    frame('content_block_delta', {
      index: 0,
      delta: { type: 'text_delta', text: 'Let me check the "tool_use" weather — ☀️ 東京' },
    }),
    frame('content_block_stop', { index: 0 }),
    frame('content_block_start', {
      index: 1,
      content_block: { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: {} },
    }),
    frame('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '' } }),
    frame('content_block_delta', {
      index: 1,
      delta: { type: 'input_json_delta', partial_json: '{"location": "San Fra' },
    }),
    frame('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: 'ncisco, CA"}' } }),
    frame('content_block_stop', { index: 1 }),
    frame('message_delta', {
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: options.deltaUsage ?? { output_tokens: 89 },
    }),
    frame('message_stop', {}),
  ];
  return sse(frames, options.eol);
}
