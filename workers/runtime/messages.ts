import { randomBytes } from 'node:crypto';
import type { ChatHistoryItem, ChatModelFunctionCall } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { UsageReport } from '../../protocol/gateway.ts';
import { optionalNumber, textOf } from './chat.ts';
import { generate, type DraftModel, type GenerateParams } from './generate.ts';
import type { LoadedModel } from './models.ts';
import type { CallOutput } from './output.ts';
import { answeredCalls, documentForced, messagesTools, mustCall, withTools, type ToolRequest } from './tools.ts';

// styleB messages on a loaded model: one `message` answer, or Anthropic's streamed event sequence
// (message_start, content_block_start, ping, content_block_delta..., content_block_stop, message_delta,
// message_stop). Text, tool_use and tool_result content; tools offered are run as workers/runtime/tools.ts
// says; images are refused before anything is generated.

interface MessagesRequest extends GenerateParams {
  stream: boolean;
  tools: ToolRequest | null;
}

type Block = {
  type?: unknown;
  text?: unknown;
  id?: unknown;
  name?: unknown;
  input?: unknown;
  tool_use_id?: unknown;
  content?: unknown;
};

/** A tool_result's content: a string or text blocks. */
function resultText(content: unknown, param: string): string {
  return content === undefined ? '' : textOf(content, param);
}

/** Every tool_result in the user turns, by the tool_use it answers. */
function toolResults(messages: unknown[]): Map<string, string> {
  const results = new Map<string, string>();
  messages.forEach((m, i) => {
    const msg = m as { role?: unknown; content?: unknown };
    if (msg?.role !== 'user' || !Array.isArray(msg.content)) return;
    msg.content.forEach((b: Block, j) => {
      if (b?.type !== 'tool_result') return;
      if (typeof b.tool_use_id !== 'string')
        throw invalid(`messages[${i}].content[${j}].tool_use_id`, 'A tool_result names its tool_use in `tool_use_id`.');
      results.set(b.tool_use_id, resultText(b.content, `messages[${i}].content[${j}].content`));
    });
  });
  return results;
}

/** A turn's text, and the assistant's tool_use blocks as function calls carrying their results. */
function turnOf(
  content: unknown,
  param: string,
  results: Map<string, string>,
): { text: string; calls: ChatModelFunctionCall[]; onlyResults: boolean } {
  if (!Array.isArray(content)) return { text: textOf(content, param), calls: [], onlyResults: false };
  const texts: string[] = [];
  const calls: ChatModelFunctionCall[] = [];
  let resultCount = 0;
  content.forEach((b: Block, j) => {
    if (b?.type === 'tool_use') {
      if (typeof b.id !== 'string' || typeof b.name !== 'string')
        throw invalid(`${param}[${j}]`, 'A tool_use block has an `id` and a `name`.');
      calls.push({
        type: 'functionCall',
        name: b.name.slice(0, 64),
        params: b.input ?? {},
        result: results.get(b.id) ?? '',
      });
    } else if (b?.type === 'tool_result') resultCount++;
    else texts.push(textOf([b], param));
  });
  return { text: texts.join(''), calls, onlyResults: resultCount > 0 && texts.length === 0 };
}

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

/** The conversation and tools of a styleB body, as generation and token counting both read them. */
export function messagesConversation(body: Record<string, unknown>): {
  history: ChatHistoryItem[];
  tools: ToolRequest | null;
} {
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw invalid('messages', '`messages` must be a non-empty array.');
  const tools = messagesTools(body);
  const history: ChatHistoryItem[] = [];
  if (body.system !== undefined && body.system !== null)
    history.push({ type: 'system', text: textOf(body.system, 'system') });
  const results = toolResults(body.messages);
  body.messages.forEach((m: unknown, i) => {
    const msg = m as { role?: unknown; content?: unknown };
    const { text, calls, onlyResults } = turnOf(msg?.content, `messages[${i}].content`, results);
    // A user turn of tool results only is carried by the calls it answers.
    if (msg?.role === 'user') {
      if (!onlyResults) history.push({ type: 'user', text });
    } else if (msg?.role === 'assistant')
      history.push({ type: 'model', response: text === '' && calls.length > 0 ? calls : [text, ...calls] });
    else throw invalid(`messages[${i}].role`, 'Messages are `user` or `assistant` (the system prompt is `system`).');
  });
  // A final assistant message is a prefill the answer continues; otherwise an empty model turn asks for one.
  const last = history.at(-1);
  if (last?.type !== 'model') history.push({ type: 'model', response: [] });
  return { history: documentForced(history, tools), tools };
}

export function parseMessagesRequest(body: Record<string, unknown>): MessagesRequest {
  const maxTokens = optionalNumber(body, 'max_tokens', 1, 1_048_576);
  if (maxTokens === undefined) throw invalid('max_tokens', '`max_tokens` is required.');
  const { history, tools } = messagesConversation(body);
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
    tools,
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

export async function messages(
  model: LoadedModel,
  draft: DraftModel | null,
  clientModel: string,
  req: MessagesRequest,
  out: CallOutput,
  signal: AbortSignal,
): Promise<void> {
  const id = `msg_${randomBytes(12).toString('base64url')}`;
  const message = (inputTokens: number) => ({
    id,
    type: 'message',
    role: 'assistant',
    model: clientModel,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: inputTokens, output_tokens: 0 },
  });
  const forced = mustCall(req.tools);
  let started = false;
  let textOpen = false;
  // message_start waits for the first text: only then is the prompt's token count known.
  const start = (inputTokens: number) => {
    if (started) return;
    started = true;
    out.write(event('message_start', { message: message(inputTokens) }));
    out.write(event('ping', {}));
  };
  const openText = () => {
    if (textOpen) return;
    textOpen = true;
    out.write(event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
  };
  const stopped = (usage: UsageReport) => out.stopped(usage);
  const result = await generate(
    model,
    draft,
    await withTools(model.model, req),
    signal,
    req.stream
      ? {
          onReady: () => out.head(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }),
          // A forced call's text is the call itself, sent as one tool_use block once it is whole.
          ...(!forced && {
            onText(text: string, inputTokens: number) {
              start(inputTokens);
              openText();
              out.write(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }));
            },
          }),
          onStopped: stopped,
        }
      : { onStopped: stopped },
  );
  if (!result) return;
  const { usage, acceleration } = result;
  const { calls, text } = answeredCalls(result, forced, 'toolu_');
  const stopReason = calls.length > 0 ? 'tool_use' : STOP_REASON[result.stopReason];
  const content: object[] = [
    ...(text !== '' || calls.length === 0 ? [{ type: 'text', text }] : []),
    ...calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments })),
  ];
  if (req.stream) {
    start(usage.inputTokens ?? 0);
    if (forced && text !== '') {
      openText();
      out.write(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }));
    }
    if (textOpen || calls.length === 0) {
      openText();
      out.write(event('content_block_stop', { index: 0 }));
    }
    let index = textOpen ? 1 : 0;
    for (const c of calls) {
      out.write(
        event('content_block_start', { index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } }),
      );
      out.write(
        event('content_block_delta', {
          index,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(c.arguments) },
        }),
      );
      out.write(event('content_block_stop', { index }));
      index++;
    }
    out.write(
      event('message_delta', {
        delta: { stop_reason: stopReason, stop_sequence: result.stopSequence },
        usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
      }),
    );
    out.write(event('message_stop', {}));
    out.end(usage, acceleration);
    return;
  }
  out.whole(
    200,
    {
      ...message(usage.inputTokens ?? 0),
      content,
      stop_reason: stopReason,
      stop_sequence: result.stopSequence,
      usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
    },
    usage,
    acceleration,
  );
}
