import { randomBytes } from 'node:crypto';
import type { ChatHistoryItem, ChatModelFunctionCall } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { UsageReport } from '../../protocol/gateway.ts';
import { generate, type DraftModel, type GenerateParams } from './generate.ts';
import type { LoadedModel } from './models.ts';
import type { CallOutput } from './output.ts';
import { answeredCalls, chatTools, documentForced, mustCall, withTools, type ToolRequest } from './tools.ts';

// styleA chat completions on a loaded model: the messages become a chat history rendered with the model's
// own chat template (node-llama-cpp picks the wrapper from `tokenizer.chat_template`), the answer goes back
// as one chat.completion or as chat.completion.chunk events. Tool calls and their results in the messages go
// into the history as function calls; tools offered are run as workers/runtime/tools.ts says.

interface ChatRequest extends GenerateParams {
  stream: boolean;
  includeUsage: boolean;
  tools: ToolRequest | null;
}

/** An earlier call's arguments as sent back by the client: a JSON string, kept as text when it is not JSON. */
function argumentsOf(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw ?? {};
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** The assistant's earlier tool calls, each with the result a later `tool` message gave it. */
function callsOf(calls: unknown, results: Map<string, string>, param: string): ChatModelFunctionCall[] {
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) throw invalid(param, '`tool_calls` must be an array.');
  return calls.map((c: unknown, i) => {
    const call = c as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
    if (typeof call?.id !== 'string' || typeof call.function?.name !== 'string')
      throw invalid(`${param}[${i}]`, 'A tool call has an `id` and a `function.name`.');
    return {
      type: 'functionCall',
      name: call.function.name.slice(0, 64),
      params: argumentsOf(call.function.arguments),
      result: results.get(call.id) ?? '',
    };
  });
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

export const optionalNumber = (
  body: Record<string, unknown>,
  key: string,
  min: number,
  max: number,
): number | undefined => {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
    throw invalid(key, `\`${key}\` must be a number from ${min} to ${max}.`);
  return v;
};

export function parseChatRequest(body: Record<string, unknown>): ChatRequest {
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw invalid('messages', '`messages` must be a non-empty array.');
  const history: ChatHistoryItem[] = [];
  const results = new Map<string, string>();
  body.messages.forEach((m: unknown, i) => {
    const msg = m as { role?: unknown; content?: unknown; tool_call_id?: unknown };
    if (msg?.role !== 'tool') return;
    if (typeof msg.tool_call_id !== 'string')
      throw invalid(`messages[${i}].tool_call_id`, 'A `tool` message names the call it answers in `tool_call_id`.');
    results.set(msg.tool_call_id, textOf(msg.content, `messages[${i}].content`));
  });
  body.messages.forEach((m: unknown, i) => {
    const msg = m as { role?: unknown; content?: unknown; tool_calls?: unknown };
    const text = textOf(msg?.content, `messages[${i}].content`);
    switch (msg?.role) {
      case 'system':
      case 'developer':
        history.push({ type: 'system', text });
        return;
      case 'user':
        history.push({ type: 'user', text });
        return;
      case 'assistant': {
        const calls = callsOf(msg.tool_calls, results, `messages[${i}].tool_calls`);
        history.push({ type: 'model', response: text === '' && calls.length > 0 ? calls : [text, ...calls] });
        return;
      }
      case 'tool':
        // Taken into the call it answers, above.
        return;
      default:
        throw invalid(
          `messages[${i}].role`,
          'The embedded runtime takes system, developer, user, assistant and tool messages.',
        );
    }
  });
  // An empty model turn at the end asks for the next answer.
  history.push({ type: 'model', response: [] });
  const tools = chatTools(body);
  // One choice per call: a sequence generates one answer.
  optionalNumber(body, 'n', 1, 1);
  const maxTokens =
    optionalNumber(body, 'max_completion_tokens', 1, 1_048_576) ??
    optionalNumber(body, 'max_tokens', 1, 1_048_576) ??
    null;
  const stop =
    body.stop === undefined || body.stop === null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  if (!Array.isArray(stop) || stop.length > 4 || stop.some((s) => typeof s !== 'string' || s === '')) {
    throw invalid('stop', '`stop` is a string or up to 4 non-empty strings.');
  }
  const options = body.stream_options as { include_usage?: unknown } | null | undefined;
  return {
    history: documentForced(history, tools),
    maxTokens: maxTokens === null ? null : Math.floor(maxTokens),
    temperature: optionalNumber(body, 'temperature', 0, 2),
    topP: optionalNumber(body, 'top_p', 0, 1),
    seed: optionalNumber(body, 'seed', 0, Number.MAX_SAFE_INTEGER),
    stop: stop as string[],
    stream: body.stream === true,
    includeUsage: options?.include_usage === true,
    tools,
  };
}

const FINISH = {
  eogToken: 'stop',
  stopGenerationTrigger: 'stop',
  customStopTrigger: 'stop',
  maxTokens: 'length',
  abort: 'stop',
  functionCalls: 'tool_calls',
} as const;

export async function chatCompletion(
  model: LoadedModel,
  draft: DraftModel | null,
  clientModel: string,
  req: ChatRequest,
  out: CallOutput,
  signal: AbortSignal,
): Promise<void> {
  const id = `chatcmpl-${randomBytes(12).toString('base64url')}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created,
      model: clientModel,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    })}\n\n`;
  const stopped = (usage: UsageReport) => out.stopped(usage);
  const forced = mustCall(req.tools);
  const result = await generate(
    model,
    draft,
    await withTools(model.model, req),
    signal,
    req.stream
      ? {
          onReady() {
            out.head(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
            out.write(chunk({ role: 'assistant', content: '' }, null));
          },
          // A forced call's text is the call itself, sent as one once it is whole.
          ...(!forced && { onText: (text: string) => out.write(chunk({ content: text }, null)) }),
          onStopped: stopped,
        }
      : { onStopped: stopped },
  );
  if (!result) return;
  const { usage, acceleration } = result;
  const usageJson = {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.totalTokens,
  };
  const { calls, text } = answeredCalls(result, forced, 'call_');
  const toolCalls = calls.map((c, index) => ({
    index,
    id: c.id,
    type: 'function',
    function: { name: c.name, arguments: JSON.stringify(c.arguments) },
  }));
  const finish = calls.length > 0 ? 'tool_calls' : FINISH[result.stopReason];
  const content = calls.length > 0 && text === '' ? null : text;
  if (req.stream) {
    // A forced call's text was held back; when it was no call (cut off by max_tokens) it is the answer.
    if (forced && text !== '') out.write(chunk({ content: text }, null));
    if (toolCalls.length > 0) out.write(chunk({ tool_calls: toolCalls }, null));
    out.write(chunk({}, finish));
    if (req.includeUsage)
      out.write(
        `data: ${JSON.stringify({
          id,
          object: 'chat.completion.chunk',
          created,
          model: clientModel,
          choices: [],
          usage: usageJson,
        })}\n\n`,
      );
    out.write('data: [DONE]\n\n');
    out.end(usage, acceleration);
    return;
  }
  out.whole(
    200,
    {
      id,
      object: 'chat.completion',
      created,
      model: clientModel,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content,
            refusal: null,
            ...(toolCalls.length > 0 && { tool_calls: toolCalls.map(({ index: _i, ...c }) => c) }),
          },
          logprobs: null,
          finish_reason: finish,
        },
      ],
      usage: usageJson,
    },
    usage,
    acceleration,
  );
}
