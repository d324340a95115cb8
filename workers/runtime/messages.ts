import { randomBytes } from 'node:crypto';
import type { ChatHistoryItem } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { UsageReport } from '../../protocol/gateway.ts';
import { optionalNumber, textOf } from './chat.ts';
import { generate, type DraftModel, type GenerateParams } from './generate.ts';
import type { LoadedModel } from './models.ts';
import type { CallOutput } from './output.ts';

// styleB messages on a loaded model: one `message` answer, or Anthropic's streamed event sequence
// (message_start, content_block_start, ping, content_block_delta..., content_block_stop, message_delta,
// message_stop). Text content only; tools and images are refused before anything is generated.

interface MessagesRequest extends GenerateParams {
  stream: boolean;
}

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

export function parseMessagesRequest(body: Record<string, unknown>): MessagesRequest {
  const maxTokens = optionalNumber(body, 'max_tokens', 1, 1_048_576);
  if (maxTokens === undefined) throw invalid('max_tokens', '`max_tokens` is required.');
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw invalid('messages', '`messages` must be a non-empty array.');
  if (body.tools !== undefined && body.tools !== null) throw invalid('tools', 'The embedded runtime does not run tools.');
  const history: ChatHistoryItem[] = [];
  if (body.system !== undefined && body.system !== null) history.push({ type: 'system', text: textOf(body.system, 'system') });
  body.messages.forEach((m: unknown, i) => {
    const msg = m as { role?: unknown; content?: unknown };
    const text = textOf(msg?.content, `messages[${i}].content`);
    if (msg?.role === 'user') history.push({ type: 'user', text });
    else if (msg?.role === 'assistant') history.push({ type: 'model', response: [text] });
    else throw invalid(`messages[${i}].role`, 'Messages are `user` or `assistant` (the system prompt is `system`).');
  });
  // A final assistant message is a prefill the answer continues; otherwise an empty model turn asks for one.
  const last = history.at(-1);
  if (last?.type !== 'model') history.push({ type: 'model', response: [] });
  const stop = body.stop_sequences ?? [];
  if (!Array.isArray(stop) || stop.length > 8 || stop.some((s) => typeof s !== 'string' || s === '')) {
    throw invalid('stop_sequences', '`stop_sequences` is up to 8 non-empty strings.');
  }
  const topK = optionalNumber(body, 'top_k', 0, 100_000);
  return {
    history,
    maxTokens: Math.floor(maxTokens),
    temperature: optionalNumber(body, 'temperature', 0, 1),
    topP: optionalNumber(body, 'top_p', 0, 1),
    topK: topK === undefined ? undefined : Math.floor(topK),
    seed: undefined,
    stop: stop as string[],
    stream: body.stream === true,
  };
}

const STOP_REASON = {
  eogToken: 'end_turn',
  stopGenerationTrigger: 'end_turn',
  customStopTrigger: 'stop_sequence',
  maxTokens: 'max_tokens',
  abort: 'end_turn',
  functionCalls: 'tool_use',
} as const;

const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

export async function messages(model: LoadedModel, draft: DraftModel | null, clientModel: string, req: MessagesRequest, out: CallOutput, signal: AbortSignal): Promise<void> {
  const id = `msg_${randomBytes(12).toString('base64url')}`;
  const message = (inputTokens: number) => ({
    id, type: 'message', role: 'assistant', model: clientModel, content: [], stop_reason: null, stop_sequence: null,
    usage: { input_tokens: inputTokens, output_tokens: 0 },
  });
  let started = false;
  // message_start waits for the first text: only then is the prompt's token count known.
  const start = (inputTokens: number) => {
    if (started) return;
    started = true;
    out.write(event('message_start', { message: message(inputTokens) }));
    out.write(event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
    out.write(event('ping', {}));
  };
  const stopped = (usage: UsageReport) => out.stopped(usage);
  const result = await generate(model, draft, req, signal, req.stream
    ? {
        onReady: () => out.head(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }),
        onText(text, inputTokens) {
          start(inputTokens);
          out.write(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }));
        },
        onStopped: stopped,
      }
    : { onStopped: stopped });
  if (!result) return;
  const { usage, acceleration } = result;
  const stopReason = STOP_REASON[result.stopReason];
  if (req.stream) {
    start(usage.inputTokens ?? 0);
    out.write(event('content_block_stop', { index: 0 }));
    out.write(event('message_delta', {
      delta: { stop_reason: stopReason, stop_sequence: result.stopSequence },
      usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
    }));
    out.write(event('message_stop', {}));
    out.end(usage, acceleration);
    return;
  }
  out.whole(200, {
    ...message(usage.inputTokens ?? 0),
    content: [{ type: 'text', text: result.text }],
    stop_reason: stopReason,
    stop_sequence: result.stopSequence,
    usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
  }, usage, acceleration);
}
