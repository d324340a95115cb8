import type { RequestState, TranslateContext, TranslatedRequest } from '../types.ts';
import {
  cannot,
  imageUrlOf,
  isRecord,
  lenientArguments,
  messagesUsageOf,
  num,
  stopReasonOf,
  str,
  textOf,
} from '../common.ts';
import { boundedUser, CHAT_TOOLS_MAX, CHAT_USER_MAX, chatStops, ToolNames } from '../field-limits.ts';

// A styleB client (POST /v1/messages) served by a styleA chat-completions upstream. What a chat upstream
// cannot carry is refused with a 400 naming the member, or dropped where docs/api.md says so (thinking
// settings and blocks sent back, top_k, cache_control, metadata other than user_id).

type Json = Record<string, unknown>;

/** Members translated, and members dropped on purpose; any other top-level member is refused. */
const TRANSLATED = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'stop_sequences',
  'stream',
  'temperature',
  'top_p',
  'tools',
  'tool_choice',
  'metadata',
  'output_config',
]);
const DROPPED = new Set(['top_k', 'thinking', 'service_tier', 'context_management', 'cache_control', 'thread']);

function userMessages(content: unknown, at: string): Json[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  if (!Array.isArray(content)) throw cannot(`${at}.content`, 'Message content must be a string or an array of blocks.');
  // Tool results become `tool` messages, which must follow the assistant's calls at once: they go first.
  const tools: Json[] = [];
  const parts: Json[] = [];
  content.forEach((block: unknown, j) => {
    const p = `${at}.content[${j}]`;
    if (!isRecord(block)) throw cannot(p, 'A content block must be an object.');
    switch (block.type) {
      case 'text':
        parts.push({ type: 'text', text: str(block.text) ?? '' });
        break;
      case 'image':
        parts.push({ type: 'image_url', image_url: { url: imageUrlOf(block.source, `${p}.source`) } });
        break;
      case 'tool_result':
        tools.push({
          role: 'tool',
          tool_call_id: str(block.tool_use_id) ?? '',
          content: textOf(block.content, `${p}.content`),
        });
        break;
      default:
        throw cannot(
          `${p}.type`,
          `A \`${String(block.type).slice(0, 40)}\` block cannot be sent to a chat-completions model.`,
        );
    }
  });
  return parts.length > 0 ? [...tools, { role: 'user', content: parts }] : tools;
}

function assistantMessage(content: unknown, at: string, names: ToolNames): Json {
  if (typeof content === 'string') return { role: 'assistant', content };
  if (!Array.isArray(content)) throw cannot(`${at}.content`, 'Message content must be a string or an array of blocks.');
  let text: string | null = null;
  const calls: Json[] = [];
  content.forEach((block: unknown, j) => {
    const p = `${at}.content[${j}]`;
    if (!isRecord(block)) throw cannot(p, 'A content block must be an object.');
    if (block.type === 'text') text = (text ?? '') + (str(block.text) ?? '');
    else if (block.type === 'tool_use') {
      const name = names.upstream(str(block.name) ?? '');
      calls.push({
        id: str(block.id) ?? '',
        type: 'function',
        function: { name, arguments: JSON.stringify(isRecord(block.input) ? block.input : {}) },
      });
    } else if (block.type !== 'thinking' && block.type !== 'redacted_thinking') {
      // Earlier thinking is the model's own scratch work; chat has no member to send it back in.
      throw cannot(
        `${p}.type`,
        `A \`${String(block.type).slice(0, 40)}\` block cannot be sent to a chat-completions model.`,
      );
    }
  });
  const message: Json = { role: 'assistant', content: text };
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

function systemMessage(system: unknown, at = 'system'): Json[] {
  if (system === undefined || system === null) return [];
  if (typeof system === 'string') return [{ role: 'system', content: system }];
  if (!Array.isArray(system)) throw cannot(at, `\`${at}\` must be a string or an array of text blocks.`);
  const parts = system.map((block: unknown, i) => {
    if (!isRecord(block) || block.type !== 'text')
      throw cannot(`${at}[${i}]`, `Only text blocks can be translated in \`${at}\`.`);
    return { type: 'text', text: str(block.text) ?? '' };
  });
  return [{ role: 'system', content: parts }];
}

function toolsOf(tools: unknown, names: ToolNames): Json[] {
  if (!Array.isArray(tools)) throw cannot('tools', '`tools` must be an array.');
  if (tools.length > CHAT_TOOLS_MAX)
    throw cannot(
      'tools',
      `A chat-completions model takes at most ${CHAT_TOOLS_MAX} tools; this request has ${tools.length}.`,
    );
  return tools.map((tool: unknown, i) => {
    if (!isRecord(tool)) throw cannot(`tools[${i}]`, 'A tool must be an object.');
    if (tool.type !== undefined && tool.type !== 'custom') {
      throw cannot(
        `tools[${i}].type`,
        `The server tool \`${String(tool.type).slice(0, 40)}\` cannot be run by a chat-completions model.`,
      );
    }
    const fn: Json = { name: names.upstream(str(tool.name) ?? '') };
    if (typeof tool.description === 'string') fn.description = tool.description;
    fn.parameters = isRecord(tool.input_schema) ? tool.input_schema : { type: 'object', properties: {} };
    return { type: 'function', function: fn };
  });
}

function toolChoiceOf(choice: unknown, out: Json, names: ToolNames): void {
  if (!isRecord(choice)) throw cannot('tool_choice', '`tool_choice` must be an object.');
  switch (choice.type) {
    case 'auto':
      out.tool_choice = 'auto';
      break;
    case 'any':
      out.tool_choice = 'required';
      break;
    case 'none':
      out.tool_choice = 'none';
      break;
    case 'tool':
      out.tool_choice = { type: 'function', function: { name: names.upstream(str(choice.name) ?? '') } };
      break;
    default:
      throw cannot('tool_choice.type', 'Unknown `tool_choice` type.');
  }
  if (choice.disable_parallel_tool_use === true && choice.type !== 'none') out.parallel_tool_calls = false;
}

/**
 * `output_config` (Claude Code sends `{effort}` on every call): `effort` is dropped as `thinking` is (a chat
 * upstream's reasoning settings differ per server), `task_budget` is advisory and dropped, and a JSON-schema
 * `format` becomes chat's `response_format`. Anything else in it is refused by name.
 */
function outputConfigOf(config: unknown, out: Json): void {
  if (!isRecord(config)) throw cannot('output_config', '`output_config` must be an object.');
  for (const key of Object.keys(config)) {
    if (key === 'effort' || key === 'task_budget') continue;
    if (key !== 'format')
      throw cannot(
        `output_config.${key.slice(0, 60)}`,
        `\`output_config.${key.slice(0, 60)}\` cannot be translated for a chat-completions model.`,
      );
  }
  const format = config.format;
  if (format === undefined || format === null) return;
  if (!isRecord(format) || format.type !== 'json_schema' || !isRecord(format.schema)) {
    throw cannot(
      'output_config.format',
      'Only a `json_schema` format with a `schema` object can be translated for a chat-completions model.',
    );
  }
  out.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema, strict: true } };
}

export function request(body: Json, ctx: TranslateContext): TranslatedRequest {
  if (body.thread !== undefined && body.thread !== null) {
    // A chat upstream holds no conversation between calls. styleB clients know this refusal (by its
    // error_code) and send the whole conversation again without `thread`.
    throw cannot(
      'thread',
      'A chat-completions model cannot hold a message thread; send the whole conversation without `thread`.',
      {
        error_code: 'thread_unsupported_request',
        unsupported: [],
      },
    );
  }
  for (const key of Object.keys(body)) {
    if (!TRANSLATED.has(key) && !DROPPED.has(key))
      throw cannot(key, `\`${key.slice(0, 60)}\` cannot be translated for a chat-completions model.`);
  }
  if (!Array.isArray(body.messages)) throw cannot('messages', '`messages` must be an array.');
  const messages: Json[] = systemMessage(body.system);
  const names = new ToolNames();
  body.messages.forEach((message: unknown, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(message)) throw cannot(at, 'A message must be an object.');
    if (message.role === 'user') messages.push(...userMessages(message.content, at));
    else if (message.role === 'assistant') messages.push(assistantMessage(message.content, at, names));
    // Messages now takes system turns inside `messages` (Claude Code 2.1.3xx sends them, with a per-turn
    // `output_config`, dropped as the top-level one's effort is); chat takes a system message anywhere.
    else if (message.role === 'system') messages.push(...systemMessage(message.content, `${at}.content`));
    else throw cannot(`${at}.role`, 'A message role must be `user`, `assistant` or `system`.');
  });
  const out: Json = { model: ctx.upstreamModelId, messages };
  const max = num(body.max_tokens);
  // OpenAI's own API takes the newer name (its reasoning models refuse the old); compatible servers read the old.
  if (max !== null) out[ctx.providerKind === 'openai' ? 'max_completion_tokens' : 'max_tokens'] = max;
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) out.stop = chatStops(body.stop_sequences);
  if (body.temperature !== undefined) out.temperature = body.temperature;
  if (body.top_p !== undefined) out.top_p = body.top_p;
  if (body.tools !== undefined) out.tools = toolsOf(body.tools, names);
  if (body.tool_choice !== undefined) toolChoiceOf(body.tool_choice, out, names);
  if (isRecord(body.metadata) && typeof body.metadata.user_id === 'string')
    out.user = boundedUser(body.metadata.user_id, CHAT_USER_MAX);
  if (body.output_config !== undefined && body.output_config !== null) outputConfigOf(body.output_config, out);
  const stream = body.stream === true;
  if (stream) {
    out.stream = true;
    // styleB reports usage in every stream; a chat upstream states it only when asked.
    if (ctx.streamUsage) out.stream_options = { include_usage: true };
  }
  return { body: out, stream, state: { includeUsage: true, toolNames: names } };
}

export function response(json: unknown, _ctx: TranslateContext, state: RequestState): unknown {
  const answer = isRecord(json) ? json : {};
  const choices = Array.isArray(answer.choices) ? answer.choices : [];
  const choice = choices.find((c: unknown) => isRecord(c) && (c.index === 0 || c.index === undefined)) ?? choices[0];
  const message = isRecord(choice) && isRecord(choice.message) ? choice.message : {};
  const content: Json[] = [];
  const reasoning = str(message.reasoning_content) ?? str(message.reasoning);
  if (reasoning !== null && reasoning !== '') content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  const text = str(message.content) ?? str(message.refusal);
  if (text !== null && text !== '') content.push({ type: 'text', text });
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls as unknown[]) {
      if (!isRecord(call) || !isRecord(call.function)) continue;
      const name = state.toolNames?.client(str(call.function.name) ?? '') ?? str(call.function.name) ?? '';
      content.push({
        type: 'tool_use',
        id: str(call.id) ?? '',
        name,
        input: lenientArguments(call.function.arguments),
      });
    }
  }
  const finish = isRecord(choice) ? choice.finish_reason : null;
  return {
    id: str(answer.id) ?? '',
    type: 'message',
    role: 'assistant',
    model: str(answer.model) ?? '',
    content,
    stop_reason: stopReasonOf(finish) ?? 'end_turn',
    stop_sequence: null,
    usage: messagesUsageOf(answer.usage),
  };
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  503: 'overloaded_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/** A chat error (`{error: {message, type, code}}`, or a bare string) in styleB's shape. */
export function messagesError(status: number, body: unknown): Json {
  const error = isRecord(body) ? body.error : body;
  const message = isRecord(error) ? (str(error.message) ?? '') : typeof error === 'string' ? error : '';
  const type = ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return { type: 'error', error: { type, message } };
}
