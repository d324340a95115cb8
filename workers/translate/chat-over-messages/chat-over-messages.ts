import type { RequestState, TranslateContext, TranslatedRequest } from '../types.ts';
import {
  argumentsObject,
  cannot,
  chatUsageOf,
  finishReasonOf,
  imageSourceOf,
  isRecord,
  mergeCounts,
  NO_COUNTS,
  num,
  str,
  textOf,
} from '../common.ts';
import { boundedUser, MESSAGES_TEMPERATURE_MAX, MESSAGES_USER_MAX, messagesToolId } from '../field-limits.ts';

// A styleA client (POST /v1/chat/completions) served by a styleB Messages upstream. What Messages cannot
// carry is refused with a 400 naming the member, or dropped where docs/api.md says so (sampling penalties,
// seed, store, reasoning_effort...). System and developer messages become `system`, wherever they stand.

type Json = Record<string, unknown>;

/** styleB requires max_tokens; chat does not. A bound every current styleB model can produce. */
export const DEFAULT_MAX_TOKENS = 4096;

const TRANSLATED = new Set([
  'model',
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'stop',
  'stream',
  'stream_options',
  'temperature',
  'top_p',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'user',
  'n',
  'response_format',
  'logprobs',
]);
const DROPPED = new Set([
  'seed',
  'presence_penalty',
  'frequency_penalty',
  'store',
  'metadata',
  'reasoning_effort',
  'service_tier',
  'prompt_cache_key',
  'safety_identifier',
  'verbosity',
]);

function userContent(content: unknown, at: string): Json[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw cannot(`${at}.content`, 'Message content must be a string or an array of parts.');
  return content.map((part: unknown, j) => {
    const p = `${at}.content[${j}]`;
    if (!isRecord(part)) throw cannot(p, 'A content part must be an object.');
    if (part.type === 'text') return { type: 'text', text: str(part.text) ?? '' };
    if (part.type === 'image_url') {
      const image = isRecord(part.image_url) ? part.image_url : {};
      const url = str(image.url);
      if (url === null) throw cannot(`${p}.image_url.url`, 'An image part needs a URL.');
      return { type: 'image', source: imageSourceOf(url, `${p}.image_url.url`) };
    }
    throw cannot(`${p}.type`, `A \`${String(part.type).slice(0, 40)}\` part cannot be sent to a Messages model.`);
  });
}

function assistantContent(message: Json, at: string): Json[] {
  const blocks: Json[] = [];
  const text = Array.isArray(message.content)
    ? message.content
        .map((part: unknown, j) =>
          isRecord(part) && part.type === 'refusal' ? (str(part.refusal) ?? '') : textOf([part], `${at}.content[${j}]`),
        )
        .join('')
    : textOf(message.content, `${at}.content`);
  if (text !== '') blocks.push({ type: 'text', text });
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    if (!Array.isArray(message.tool_calls)) throw cannot(`${at}.tool_calls`, '`tool_calls` must be an array.');
    message.tool_calls.forEach((call: unknown, j) => {
      const p = `${at}.tool_calls[${j}]`;
      if (!isRecord(call) || !isRecord(call.function)) throw cannot(p, 'Only function tool calls can be translated.');
      blocks.push({
        type: 'tool_use',
        id: messagesToolId(str(call.id) ?? ''),
        name: str(call.function.name) ?? '',
        input: argumentsObject(call.function.arguments, `${p}.function.arguments`),
      });
    });
  }
  return blocks;
}

/** Consecutive turns of one role become one: parallel tool results must share the user turn after the calls. */
function push(messages: Json[], role: 'user' | 'assistant', blocks: Json[]): void {
  if (blocks.length === 0) return;
  const last = messages.at(-1);
  if (last !== undefined && last.role === role) (last.content as Json[]).push(...blocks);
  else messages.push({ role, content: blocks });
}

function toolsOf(tools: unknown): Json[] {
  if (!Array.isArray(tools)) throw cannot('tools', '`tools` must be an array.');
  return tools.map((tool: unknown, i) => {
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(tool.function))
      throw cannot(`tools[${i}].type`, 'Only function tools can be translated.');
    const fn = tool.function;
    const out: Json = { name: str(fn.name) ?? '' };
    if (typeof fn.description === 'string') out.description = fn.description;
    out.input_schema = isRecord(fn.parameters) ? fn.parameters : { type: 'object', properties: {} };
    return out;
  });
}

function toolChoiceOf(choice: unknown): Json {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  if (
    isRecord(choice) &&
    choice.type === 'function' &&
    isRecord(choice.function) &&
    typeof choice.function.name === 'string'
  )
    return { type: 'tool', name: choice.function.name };
  throw cannot('tool_choice', '`tool_choice` must be auto, required, none or a named function to be translated.');
}

export function request(body: Json, ctx: TranslateContext): TranslatedRequest {
  for (const key of Object.keys(body)) {
    if (!TRANSLATED.has(key) && !DROPPED.has(key))
      throw cannot(key, `\`${key.slice(0, 60)}\` cannot be translated for a Messages model.`);
  }
  if (body.n !== undefined && body.n !== null && body.n !== 1)
    throw cannot('n', 'A Messages model answers with one choice: `n` must be 1.');
  if (body.logprobs === true) throw cannot('logprobs', 'A Messages model reports no log probabilities.');
  if (
    body.response_format !== undefined &&
    body.response_format !== null &&
    !(isRecord(body.response_format) && body.response_format.type === 'text')
  ) {
    throw cannot('response_format', 'Only `response_format: {type: "text"}` can be translated for a Messages model.');
  }
  if (!Array.isArray(body.messages)) throw cannot('messages', '`messages` must be an array.');
  const system: Json[] = [];
  const messages: Json[] = [];
  body.messages.forEach((message: unknown, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(message)) throw cannot(at, 'A message must be an object.');
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push({ type: 'text', text: textOf(message.content, `${at}.content`) });
        break;
      case 'user':
        push(messages, 'user', userContent(message.content, at));
        break;
      case 'assistant':
        push(messages, 'assistant', assistantContent(message, at));
        break;
      case 'tool':
        push(messages, 'user', [
          {
            type: 'tool_result',
            tool_use_id: messagesToolId(str(message.tool_call_id) ?? ''),
            content: textOf(message.content, `${at}.content`),
          },
        ]);
        break;
      default:
        throw cannot(
          `${at}.role`,
          `A \`${String(message.role).slice(0, 40)}\` message cannot be translated for a Messages model.`,
        );
    }
  });
  const out: Json = {
    model: ctx.upstreamModelId,
    messages,
    max_tokens: num(body.max_completion_tokens) ?? num(body.max_tokens) ?? DEFAULT_MAX_TOKENS,
  };
  if (system.length > 0) out.system = system;
  if (typeof body.stop === 'string') out.stop_sequences = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.length > 0) out.stop_sequences = body.stop;
  if (body.temperature !== undefined && body.temperature !== null) {
    if (typeof body.temperature === 'number' && body.temperature > MESSAGES_TEMPERATURE_MAX) {
      throw cannot(
        'temperature',
        `A Messages model takes a temperature from 0 to ${MESSAGES_TEMPERATURE_MAX}; this request has ` +
          `${body.temperature}.`,
      );
    }
    out.temperature = body.temperature;
  }
  if (body.top_p !== undefined && body.top_p !== null) out.top_p = body.top_p;
  if (body.tools !== undefined && body.tools !== null) out.tools = toolsOf(body.tools);
  if (body.tool_choice !== undefined && body.tool_choice !== null) out.tool_choice = toolChoiceOf(body.tool_choice);
  if (body.parallel_tool_calls === false && out.tools !== undefined) {
    const choice = (out.tool_choice as Json | undefined) ?? { type: 'auto' };
    if (choice.type !== 'none') out.tool_choice = { ...choice, disable_parallel_tool_use: true };
  }
  if (typeof body.user === 'string') out.metadata = { user_id: boundedUser(body.user, MESSAGES_USER_MAX) };
  const stream = body.stream === true;
  if (stream) out.stream = true;
  const includeUsage = stream && isRecord(body.stream_options) && body.stream_options.include_usage === true;
  return { body: out, stream, state: { includeUsage } };
}

export function response(json: unknown, ctx: TranslateContext, _state: RequestState): unknown {
  const answer = isRecord(json) ? json : {};
  let text: string | null = null;
  let reasoning: string | null = null;
  const calls: Json[] = [];
  for (const block of Array.isArray(answer.content) ? (answer.content as unknown[]) : []) {
    if (!isRecord(block)) continue;
    if (block.type === 'text') text = (text ?? '') + (str(block.text) ?? '');
    else if (block.type === 'thinking') reasoning = (reasoning ?? '') + (str(block.thinking) ?? '');
    else if (block.type === 'tool_use') {
      calls.push({
        id: str(block.id) ?? '',
        type: 'function',
        function: { name: str(block.name) ?? '', arguments: JSON.stringify(isRecord(block.input) ? block.input : {}) },
      });
    }
  }
  const message: Json = { role: 'assistant', content: text, refusal: null };
  if (reasoning !== null) message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  return {
    id: str(answer.id) ?? '',
    object: 'chat.completion',
    created: ctx.now(),
    model: str(answer.model) ?? '',
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonOf(answer.stop_reason) ?? 'stop' }],
    usage: chatUsageOf(mergeCounts(NO_COUNTS, answer.usage)),
  };
}

const ERROR_CODES: Record<number, string> = { 401: 'invalid_api_key', 429: 'rate_limit_exceeded' };

/** A styleB error (`{type: "error", error: {type, message}}`) in chat's shape. */
export function chatError(status: number, body: unknown): Json {
  const error = isRecord(body) ? body.error : body;
  const message = isRecord(error) ? (str(error.message) ?? '') : typeof error === 'string' ? error : '';
  const type = isRecord(error)
    ? (str(error.type) ?? 'api_error')
    : status >= 500
      ? 'api_error'
      : 'invalid_request_error';
  return { error: { message, type, param: null, code: ERROR_CODES[status] ?? null } };
}
