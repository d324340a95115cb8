import type { Handler } from '../http.ts';
import {
  bodyOf,
  isObject,
  plannedCalls,
  splitText,
  stringField,
  type FakeState,
  type FakeToolCall,
  type JsonObject,
} from '../script.ts';
import { sseEvent, type InStreamError, type StreamReply } from '../stream.ts';
import { anthropicError } from './errors.ts';

// Anthropic's Messages API as its reference documents it, also as llama-server and Ollama serve it:
// POST /v1/messages answers a `message` (a `thinking` block first when the request enables thinking and the
// test scripted one; a `server_tool_use` + `web_search_tool_result` pair when the request offers the server
// web search tool and the test scripted a search; text; then `tool_use` blocks when tools are offered); with
// `stream: true` the events are message_start, then per block content_block_start / content_block_delta
// (text_delta, thinking_delta and signature_delta, or input_json_delta) / content_block_stop (a search
// result block arrives whole in its start), a ping after the first block starts, message_delta (stop_reason,
// cumulative output_tokens) and message_stop, each `event: <type>` with the same `type` in its data. POST
// /v1/messages/count_tokens answers `{input_tokens}`. Anthropic's own dialect refuses what its API refuses of
// tools: custom tool names outside `^[a-zA-Z0-9_-]{1,64}$`, two tools of one name, the tool types of OpenAI's
// APIs (which a translation must never send), and more than 4 `cache_control` breakpoints.

/** Anthropic itself reports cache counters; llama-server and Ollama report the two totals only. */
export type MessagesDialect = 'anthropic' | 'llamacpp' | 'ollama';

export interface MessagesContext {
  dialect: MessagesDialect;
  state: FakeState;
}

/** Anthropic's documented tool name rule, and its server web search tool. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const WEB_SEARCH_TYPE = 'web_search_20250305';
/** Tool types of OpenAI's APIs that Anthropic's has not; Anthropic's own (server tools, tool search) pass. */
const OPENAI_TYPES = new Set([
  'function',
  'namespace',
  'web_search',
  'web_search_preview',
  'file_search',
  'code_interpreter',
  'image_generation',
  'local_shell',
]);
const MAX_BREAKPOINTS = 4;

interface Block {
  start: JsonObject;
  deltas: JsonObject[];
  done: JsonObject;
}

/** Custom tools the request offers; server tools (`web_search_...`) are Anthropic's to run, never called. */
function toolNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((t: unknown) =>
    isObject(t) && typeof t.name === 'string' && (t.type === undefined || t.type === 'custom') ? [t.name] : [],
  );
}

/** Whether the conversation's last message is a user turn that carries a tool result. */
function endsWithToolResult(messages: unknown): boolean {
  const last = Array.isArray(messages) ? messages.at(-1) : undefined;
  return (
    isObject(last) &&
    Array.isArray(last.content) &&
    last.content.some((block: unknown) => isObject(block) && block.type === 'tool_result')
  );
}

/** Anthropic's tool_choice (`{type: auto|any|tool|none, name?}`) in the shape plannedCalls reads. */
function choiceOf(choice: unknown): unknown {
  if (!isObject(choice)) return undefined;
  if (choice.type === 'none') return 'none';
  return choice.type === 'tool' ? { name: choice.name } : undefined;
}

const offersWebSearch = (tools: unknown): boolean =>
  Array.isArray(tools) && tools.some((t: unknown) => isObject(t) && t.type === WEB_SEARCH_TYPE);

/** What Anthropic's API refuses of a request's tools and cache breakpoints, as its error message says it. */
function toolsError(body: JsonObject): string | null {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const names = new Set<string>();
  for (const [i, tool] of tools.entries()) {
    if (!isObject(tool)) return `tools.${i}: Input should be an object`;
    if (typeof tool.type === 'string' && OPENAI_TYPES.has(tool.type))
      return `tools.${i}: Input tag '${tool.type}' found using 'type' does not match any of the expected tags`;
    const name = String(tool.name);
    if ((tool.type === undefined || tool.type === 'custom') && !TOOL_NAME.test(name))
      return `tools.${i}.custom.name: String should match pattern '${TOOL_NAME.source}'`;
    if (tool.type === WEB_SEARCH_TYPE && name !== 'web_search')
      return `tools.${i}.web_search_20250305.name: Input should be 'web_search'`;
    if (names.has(name)) return 'tools: Tool names must be unique.';
    names.add(name);
  }
  // Only where Anthropic takes breakpoints; a client's body may nest deeper than JSON.stringify reaches.
  let marks: number;
  try {
    marks = JSON.stringify([body.tools, body.system, body.messages]).split('"cache_control":').length - 1;
  } catch {
    return 'The request body nests too deeply.';
  }
  if (marks > MAX_BREAKPOINTS)
    return `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${marks}.`;
  return null;
}

function usageOf(ctx: MessagesContext, outputTokens: number, searches = 0): JsonObject {
  const u = ctx.state.usage;
  if (ctx.dialect !== 'anthropic') return { input_tokens: u.inputTokens, output_tokens: outputTokens };
  return {
    ...(searches > 0 && { server_tool_use: { web_search_requests: searches } }),
    input_tokens: u.inputTokens,
    cache_creation_input_tokens: u.cacheCreationTokens,
    cache_read_input_tokens: u.cachedTokens,
    // The split of the writes by cache lifetime; cache_creation_input_tokens is their sum.
    cache_creation: {
      ephemeral_5m_input_tokens: u.cacheCreationTokens - (u.cacheCreation1hTokens ?? 0),
      ephemeral_1h_input_tokens: u.cacheCreation1hTokens ?? 0,
    },
    output_tokens: outputTokens,
    service_tier: 'standard',
  };
}

/** The thinking block and the web search the request lets the scripted output make. */
function leadingBlocks(ctx: MessagesContext, body: JsonObject): Block[] {
  const { thinking, webSearch, chunks } = ctx.state.output;
  const blocks: Block[] = [];
  if (thinking !== null && isObject(body.thinking) && body.thinking.type === 'enabled') {
    blocks.push({
      start: { type: 'thinking', thinking: '', signature: '' },
      deltas: [
        ...splitText(thinking.text, chunks).map((piece) => ({ type: 'thinking_delta', thinking: piece })),
        { type: 'signature_delta', signature: thinking.signature },
      ],
      done: { type: 'thinking', thinking: thinking.text, signature: thinking.signature },
    });
  }
  if (webSearch !== null && offersWebSearch(body.tools)) {
    const id = ctx.state.nextId('srvtoolu_01');
    const input = { query: webSearch.query };
    blocks.push({
      start: { type: 'server_tool_use', id, name: 'web_search', input: {} },
      deltas: [{ type: 'input_json_delta', partial_json: JSON.stringify(input) }],
      done: { type: 'server_tool_use', id, name: 'web_search', input },
    });
    const content = webSearch.results.map((r) => ({
      type: 'web_search_result',
      url: r.url,
      title: r.title,
      encrypted_content: `enc-${r.url}`,
      page_age: null,
    }));
    const result = { type: 'web_search_tool_result', tool_use_id: id, content };
    blocks.push({ start: result, deltas: [], done: result });
  }
  return blocks;
}

function blocksOf(ctx: MessagesContext, body: JsonObject, calls: FakeToolCall[]): Block[] {
  const { text, chunks, argumentChunks } = ctx.state.output;
  const blocks: Block[] = leadingBlocks(ctx, body);
  if (text !== '') {
    blocks.push({
      start: { type: 'text', text: '' },
      deltas: splitText(text, chunks).map((piece) => ({ type: 'text_delta', text: piece })),
      done: { type: 'text', text },
    });
  }
  for (const call of calls) {
    const id = ctx.state.nextId('toolu_01');
    const json = JSON.stringify(call.arguments);
    blocks.push({
      start: { type: 'tool_use', id, name: call.name, input: {} },
      deltas: splitText(json, argumentChunks).map((piece) => ({ type: 'input_json_delta', partial_json: piece })),
      done: { type: 'tool_use', id, name: call.name, input: call.arguments },
    });
  }
  return blocks;
}

function streamEvents(ctx: MessagesContext, message: JsonObject, blocks: Block[], searches: number): string[] {
  const events: string[] = [];
  const emit = (type: string, fields: JsonObject = {}): void => {
    events.push(sseEvent(type, { type, ...fields }));
  };
  // message_start reports input usage and a token or so of output; message_delta carries the final count.
  emit('message_start', {
    message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: usageOf(ctx, 1) },
  });
  blocks.forEach((block, index) => {
    emit('content_block_start', { index, content_block: block.start });
    if (index === 0) emit('ping');
    for (const delta of block.deltas) emit('content_block_delta', { index, delta });
    emit('content_block_stop', { index });
  });
  emit('message_delta', {
    delta: { stop_reason: message.stop_reason, stop_sequence: null },
    usage: {
      output_tokens: ctx.state.usage.outputTokens,
      ...(searches > 0 && { server_tool_use: { web_search_requests: searches } }),
    },
  });
  emit('message_stop');
  return events;
}

/** How Anthropic reports a failure once a stream has begun. */
export function messagesStreamError(error: InStreamError): string {
  return sseEvent('error', { type: 'error', error: { type: error.type, message: error.message } });
}

export function messagesRoutes(ctx: MessagesContext): Record<string, Handler> {
  const validate = (
    body: JsonObject,
    needsMaxTokens: boolean,
    version: unknown,
  ): ReturnType<typeof anthropicError> | null => {
    if (stringField(body, 'model') === undefined)
      return anthropicError(400, 'invalid_request_error', 'model: Field required');
    // API version 2026-10-21 removed the sampling parameters: a request still sending one is refused.
    const removed = ['temperature', 'top_p', 'top_k'].find((p) => p in body);
    if (ctx.dialect === 'anthropic' && version === '2026-10-21' && removed !== undefined) {
      return anthropicError(
        400,
        'invalid_request_error',
        `${removed}: Extra inputs are not permitted in API version 2026-10-21`,
      );
    }
    if (!Array.isArray(body.messages)) return anthropicError(400, 'invalid_request_error', 'messages: Field required');
    if (needsMaxTokens && typeof body.max_tokens !== 'number')
      return anthropicError(400, 'invalid_request_error', 'max_tokens: Field required');
    const refused = ctx.dialect === 'anthropic' ? toolsError(body) : null;
    return refused === null ? null : anthropicError(400, 'invalid_request_error', refused);
  };

  const create: Handler = (req) => {
    const body = bodyOf(req.json);
    const invalid = validate(body, true, req.headers['anthropic-version']);
    if (invalid !== null) return invalid;
    const answered = ctx.state.output.toolCallsUntilResult === true && endsWithToolResult(body.messages);
    const calls = answered ? [] : plannedCalls(ctx.state.output, toolNames(body.tools), choiceOf(body.tool_choice));
    const blocks = blocksOf(ctx, body, calls);
    const searches = blocks.filter((b) => b.start.type === 'server_tool_use').length;
    const message: JsonObject = {
      id: ctx.state.nextId('msg_01'),
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: blocks.map((b) => b.done),
      stop_reason: calls.length > 0 ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: usageOf(ctx, ctx.state.usage.outputTokens, searches),
    };
    const headers = { 'request-id': ctx.state.nextId('req_') };
    if (body.stream !== true) return { status: 200, body: message, headers };
    const reply: StreamReply = {
      status: 200,
      events: streamEvents(ctx, message, blocks, searches),
      errorEvent: messagesStreamError,
      headers,
    };
    return reply;
  };

  const routes: Record<string, Handler> = { 'POST /v1/messages': create };
  if (ctx.dialect !== 'ollama') {
    routes['POST /v1/messages/count_tokens'] = (req) => {
      const invalid = validate(bodyOf(req.json), false, req.headers['anthropic-version']);
      return invalid ?? { status: 200, body: { input_tokens: ctx.state.usage.inputTokens } };
    };
  }
  return routes;
}
