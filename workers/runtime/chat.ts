import { randomBytes } from 'node:crypto';
import type { ChatHistoryItem } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { UsageReport } from '../../protocol/gateway.ts';
import { generate, type DraftModel, type GenerateParams } from './generate.ts';
import type { LoadedModel } from './models.ts';
import type { CallOutput } from './output.ts';

// styleA chat completions on a loaded model: the messages become a chat history rendered with the model's
// own chat template (node-llama-cpp picks the wrapper from `tokenizer.chat_template`), the answer goes back
// as one chat.completion or as chat.completion.chunk events.

interface ChatRequest extends GenerateParams {
  stream: boolean;
  includeUsage: boolean;
}

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

export function textOf(content: unknown, param: string): string {
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

export const optionalNumber = (body: Record<string, unknown>, key: string, min: number, max: number): number | undefined => {
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

const FINISH = { eogToken: 'stop', stopGenerationTrigger: 'stop', customStopTrigger: 'stop', maxTokens: 'length', abort: 'stop', functionCalls: 'tool_calls' } as const;

export async function chatCompletion(model: LoadedModel, draft: DraftModel | null, clientModel: string, req: ChatRequest, out: CallOutput, signal: AbortSignal): Promise<void> {
  const id = `chatcmpl-${randomBytes(12).toString('base64url')}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: clientModel, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  const stopped = (usage: UsageReport) => out.stopped(usage);
  const result = await generate(model, draft, req, signal, req.stream
    ? {
        onReady() {
          out.head(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
          out.write(chunk({ role: 'assistant', content: '' }, null));
        },
        onText: (text) => out.write(chunk({ content: text }, null)),
        onStopped: stopped,
      }
    : { onStopped: stopped });
  if (!result) return;
  const { usage, acceleration } = result;
  const usageJson = { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.totalTokens };
  const finish = FINISH[result.stopReason];
  if (req.stream) {
    out.write(chunk({}, finish));
    if (req.includeUsage) out.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: clientModel, choices: [], usage: usageJson })}\n\n`);
    out.write('data: [DONE]\n\n');
    out.end(usage, acceleration);
    return;
  }
  out.whole(200, {
    id,
    object: 'chat.completion',
    created,
    model: clientModel,
    choices: [{ index: 0, message: { role: 'assistant', content: result.text, refusal: null }, logprobs: null, finish_reason: finish }],
    usage: usageJson,
  }, usage, acceleration);
}
