import { randomBytes } from 'node:crypto';
import { LlamaChat, TokenMeter, type ChatHistoryItem } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { UsageReport } from '../../protocol/gateway.ts';
import type { LoadedModel } from './models.ts';
import type { CallOutput } from './output.ts';

// styleA chat completions on a loaded model: the messages become a chat history rendered with the model's
// own chat template (node-llama-cpp picks the wrapper from `tokenizer.chat_template`), the answer goes back
// as one chat.completion or as chat.completion.chunk events.

interface ChatRequest {
  history: ChatHistoryItem[];
  maxTokens: number | null;
  temperature: number | undefined;
  topP: number | undefined;
  seed: number | undefined;
  stop: string[];
  stream: boolean;
  includeUsage: boolean;
}

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

function textOf(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (Array.isArray(content)) {
    return content
      .map((part: unknown, i) => {
        const p = part as { type?: unknown; text?: unknown };
        if (p && p.type === 'text' && typeof p.text === 'string') return p.text;
        throw invalid(`${param}[${i}]`, 'The embedded runtime reads text content parts only.');
      })
      .join('');
  }
  throw invalid(param, 'Message content must be a string or an array of text parts.');
}

const optionalNumber = (body: Record<string, unknown>, key: string, min: number, max: number): number | undefined => {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) throw invalid(key, `\`${key}\` must be a number from ${min} to ${max}.`);
  return v;
};

export function parseChatRequest(body: Record<string, unknown>): ChatRequest {
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw invalid('messages', '`messages` must be a non-empty array.');
  const history: ChatHistoryItem[] = [];
  body.messages.forEach((m: unknown, i) => {
    const msg = m as { role?: unknown; content?: unknown };
    const text = textOf(msg?.content, `messages[${i}].content`);
    switch (msg?.role) {
      case 'system':
      case 'developer':
        history.push({ type: 'system', text });
        return;
      case 'user':
        history.push({ type: 'user', text });
        return;
      case 'assistant':
        history.push({ type: 'model', response: [text] });
        return;
      default:
        throw invalid(`messages[${i}].role`, 'The embedded runtime takes system, developer, user and assistant messages.');
    }
  });
  // An empty model turn at the end asks for the next answer.
  history.push({ type: 'model', response: [] });
  // One choice per call: a sequence generates one answer.
  optionalNumber(body, 'n', 1, 1);
  const maxTokens = optionalNumber(body, 'max_completion_tokens', 1, 1_048_576) ?? optionalNumber(body, 'max_tokens', 1, 1_048_576) ?? null;
  const stop = body.stop === undefined || body.stop === null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  if (!Array.isArray(stop) || stop.length > 4 || stop.some((s) => typeof s !== 'string' || s === '')) {
    throw invalid('stop', '`stop` is a string or up to 4 non-empty strings.');
  }
  const options = body.stream_options as { include_usage?: unknown } | null | undefined;
  return {
    history,
    maxTokens: maxTokens === null ? null : Math.floor(maxTokens),
    temperature: optionalNumber(body, 'temperature', 0, 2),
    topP: optionalNumber(body, 'top_p', 0, 1),
    seed: optionalNumber(body, 'seed', 0, Number.MAX_SAFE_INTEGER),
    stop: stop as string[],
    stream: body.stream === true,
    includeUsage: options?.include_usage === true,
  };
}

export function usageOf(input: number, output: number): UsageReport {
  return { inputTokens: input, outputTokens: output, cachedInputTokens: null, reasoningTokens: null, totalTokens: input + output, costUsd: null, toolCalls: {} };
}

const FINISH = { eogToken: 'stop', stopGenerationTrigger: 'stop', customStopTrigger: 'stop', maxTokens: 'length', abort: 'stop', functionCalls: 'tool_calls' } as const;

export async function chatCompletion(model: LoadedModel, clientModel: string, req: ChatRequest, out: CallOutput, signal: AbortSignal): Promise<void> {
  const lease = await model.acquire(signal);
  const { sequence } = lease;
  const chat = new LlamaChat({ contextSequence: sequence, chatWrapper: model.chatWrapper, autoDisposeSequence: false });
  try {
    // Each call starts from an empty sequence, so the meter counts exactly this call's prompt.
    await sequence.clearHistory();
    const before = sequence.tokenMeter.getState();
    const id = `chatcmpl-${randomBytes(12).toString('base64url')}`;
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: clientModel, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
    if (req.stream) {
      out.head(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      out.write(chunk({ role: 'assistant', content: '' }, null));
    }
    const result = await chat.generateResponse(req.history, {
      maxTokens: req.maxTokens ?? sequence.contextSize,
      ...(req.temperature !== undefined && { temperature: req.temperature }),
      ...(req.topP !== undefined && { topP: req.topP }),
      ...(req.seed !== undefined && { seed: req.seed }),
      ...(req.stop.length > 0 && { customStopTriggers: req.stop }),
      signal,
      stopOnAbortSignal: true,
      ...(req.stream && { onTextChunk: (text: string) => out.write(chunk({ content: text }, null)) }),
    });
    if (signal.aborted) return;
    const used = TokenMeter.diff(sequence.tokenMeter, before);
    const usage = usageOf(used.usedInputTokens, used.usedOutputTokens);
    const usageJson = { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.totalTokens };
    const finish = FINISH[result.metadata.stopReason];
    if (req.stream) {
      out.write(chunk({}, finish));
      if (req.includeUsage) out.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: clientModel, choices: [], usage: usageJson })}\n\n`);
      out.write('data: [DONE]\n\n');
      out.end(usage);
      return;
    }
    out.whole(200, {
      id,
      object: 'chat.completion',
      created,
      model: clientModel,
      choices: [{ index: 0, message: { role: 'assistant', content: result.response, refusal: null }, logprobs: null, finish_reason: finish }],
      usage: usageJson,
    }, usage);
  } finally {
    chat.dispose({ disposeSequence: false });
    lease.release();
  }
}
