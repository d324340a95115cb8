import { randomBytes } from 'node:crypto';
import { ServiceError } from '../../../protocol/errors.ts';
import {
  callItem,
  callPrefix,
  planToolChoice,
  planTools,
  ToolNames,
  type ToolChoice,
  type ToolPlan,
} from '../responses-tools.ts';
import { chatMessages } from './responses-chat-input.ts';

// The Responses API served over chat completions, for upstreams that only speak chat (the embedded runtime,
// llama-server, Ollama, openai_compatible servers): a Responses request becomes one chat request, and the
// chat answer becomes a `response` object. Stateless only: nothing is stored, so fields that name or ask
// for stored state are refused (400 naming the field) rather than silently ignored. The stream half lives in
// responses-chat-stream.ts.

type Json = Record<string, unknown>;

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const present = (v: unknown): boolean => v !== undefined && v !== null;

/** One call's identity: the response ID, its clock, and item IDs; injectable so goldens are stable. */
export interface ResponsesCallContext {
  responseId: string;
  createdAt: number;
  /** A new ID for an output item, with the item type's prefix (`msg`, `fc`, `rs`). */
  itemId(prefix: string): string;
  /** The client's request, echoed in the answer (instructions, tools, sampling). */
  request: Json;
  /** The upstream's tool names and the client's tools behind them (responses-tools.ts); none renamed when absent. */
  tools?: ToolNames;
}

export function responsesCallContext(request: Json, tools?: ToolNames): ResponsesCallContext {
  const id = (prefix: string) => `${prefix}_${randomBytes(16).toString('hex')}`;
  return {
    responseId: id('resp'),
    createdAt: Math.floor(Date.now() / 1000),
    itemId: id,
    request,
    ...(tools !== undefined && { tools }),
  };
}

/**
 * Stateful fields are refused by name: neither chat completions nor the Messages API keeps stored responses
 * or conversations to resume. `over` names the upstream protocol in the messages.
 */
export function refuseStateful(body: Json, over = 'chat completions'): void {
  const refused: Record<string, string> = {
    previous_response_id:
      `This model is served over ${over}, which keep no stored responses: send the whole ` +
      `conversation in \`input\`.`,
    conversation:
      `This model is served over ${over}, which keep no conversations: send the whole conversation in ` + `\`input\`.`,
    prompt: `Stored prompt templates are not available for models served over ${over}.`,
  };
  for (const [field, message] of Object.entries(refused)) if (present(body[field])) throw invalid(field, message);
  if (body.store === true)
    throw invalid('store', `Models served over ${over} answer statelessly: send \`store: false\` or omit it.`);
  if (body.background === true)
    throw invalid(
      'background',
      `Background responses need stored state; models served over ${over} answer in the foreground only.`,
    );
}

function responseFormat(text: unknown): Json | undefined {
  if (!present(text)) return undefined;
  if (!isObject(text)) throw invalid('text', '`text` must be an object.');
  const format = text.format;
  if (!present(format)) return undefined;
  if (!isObject(format)) throw invalid('text.format', '`text.format` must be an object.');
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema') {
    if (typeof format.name !== 'string' || !isObject(format.schema))
      throw invalid('text.format', 'A json_schema format needs `name` and `schema`.');
    const schema: Json = { name: format.name, schema: format.schema };
    if (typeof format.description === 'string') schema.description = format.description;
    if (typeof format.strict === 'boolean') schema.strict = format.strict;
    return { type: 'json_schema', json_schema: schema };
  }
  throw invalid('text.format.type', '`text.format.type` is text, json_object or json_schema.');
}

export function numberIn(body: Json, key: string, min: number, max: number): number | undefined {
  const v = body[key];
  if (!present(v)) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
    throw invalid(key, `\`${key}\` must be a number from ${min} to ${max}.`);
  return v;
}

/** The plan's tools as chat function tools. */
function chatTools(plan: ToolPlan): Json[] {
  return plan.tools.map((tool) => {
    const fn: Json = { name: tool.name };
    if (tool.description !== undefined) fn.description = tool.description;
    if (tool.parameters !== undefined) fn.parameters = tool.parameters;
    if (tool.strict !== undefined) fn.strict = tool.strict;
    return { type: 'function', function: fn };
  });
}

function chatToolChoice(choice: ToolChoice): unknown {
  if (choice === undefined || typeof choice === 'string') return choice;
  return { type: 'function', function: { name: choice.name } };
}

/**
 * The chat request for a Responses request, and the plan of its tools (what was flattened, renamed or left
 * out: chat runs no built-in tool), which the answer maps back with. `model` is kept as sent (the relay names
 * the upstream model). A streamed request asks for the usage chunk, which `response.completed` needs.
 */
export function responsesToChat(body: Json): { request: Json; plan: ToolPlan } {
  refuseStateful(body);
  const plan = planTools(body.tools, false);
  const chat: Json = { model: body.model, messages: chatMessages(body.input, body.instructions, plan.names) };
  const tools = chatTools(plan);
  if (tools.length > 0) chat.tools = tools;
  const choice = chatToolChoice(planToolChoice(body.tool_choice, plan));
  if (choice !== undefined) chat.tool_choice = choice;
  if (present(body.parallel_tool_calls)) {
    if (typeof body.parallel_tool_calls !== 'boolean')
      throw invalid('parallel_tool_calls', '`parallel_tool_calls` must be a boolean.');
    if (tools.length > 0) chat.parallel_tool_calls = body.parallel_tool_calls;
  }
  const maxTokens = numberIn(body, 'max_output_tokens', 1, 1_048_576);
  // `max_tokens`, not `max_completion_tokens`: every chat server this serves (llama-server, Ollama, vLLM) reads it.
  if (maxTokens !== undefined) chat.max_tokens = Math.floor(maxTokens);
  const temperature = numberIn(body, 'temperature', 0, 2);
  if (temperature !== undefined) chat.temperature = temperature;
  const topP = numberIn(body, 'top_p', 0, 1);
  if (topP !== undefined) chat.top_p = topP;
  const format = responseFormat(body.text);
  if (format !== undefined) chat.response_format = format;
  if (typeof body.user === 'string') chat.user = body.user;
  if (present(body.stream) && typeof body.stream !== 'boolean') throw invalid('stream', '`stream` must be a boolean.');
  if (body.stream === true) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return { request: chat, plan };
}

/** The chat request alone (the embedded runtime's token count, which needs no names back). */
export function responsesToChatRequest(body: Json): Json {
  return responsesToChat(body).request;
}

/** The response's echo of the request: what a Responses client reads back beside the output. */
export function responseEnvelope(ctx: ResponsesCallContext, status: string): Json {
  const req = ctx.request;
  const tools = Array.isArray(req.tools) ? req.tools : [];
  return {
    id: ctx.responseId,
    object: 'response',
    created_at: ctx.createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: typeof req.instructions === 'string' ? req.instructions : null,
    max_output_tokens: typeof req.max_output_tokens === 'number' ? req.max_output_tokens : null,
    metadata: isObject(req.metadata) ? req.metadata : {},
    model: req.model,
    output: [],
    parallel_tool_calls: typeof req.parallel_tool_calls === 'boolean' ? req.parallel_tool_calls : true,
    previous_response_id: null,
    reasoning: null,
    store: false,
    temperature: typeof req.temperature === 'number' ? req.temperature : null,
    text: isObject(req.text) && isObject(req.text.format) ? { format: req.text.format } : { format: { type: 'text' } },
    tool_choice: present(req.tool_choice) ? req.tool_choice : 'auto',
    tools,
    top_p: typeof req.top_p === 'number' ? req.top_p : null,
    truncation: 'disabled',
    usage: null,
  };
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);

/** Chat usage in the Responses shape; null when the upstream reported none. */
export function responsesUsage(usage: unknown): Json | null {
  if (!isObject(usage)) return null;
  const input = count(usage.prompt_tokens);
  const output = count(usage.completion_tokens);
  const promptDetails = isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const completionDetails = isObject(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: count(promptDetails.cached_tokens) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: count(completionDetails.reasoning_tokens) },
    total_tokens: typeof usage.total_tokens === 'number' ? usage.total_tokens : input + output,
  };
}

/** Status and incomplete_details from a chat finish_reason. */
export function finishStatus(finish: unknown): { status: string; incomplete_details: Json | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

export const outputText = (text: string): Json => ({ type: 'output_text', text, annotations: [], logprobs: [] });

/** The reasoning text servers put beside the answer (`reasoning_content`: llama-server, vLLM; `reasoning`: Ollama). */
export function reasoningOf(message: Json): string | null {
  const r = typeof message.reasoning_content === 'string' ? message.reasoning_content : message.reasoning;
  return typeof r === 'string' && r !== '' ? r : null;
}

/**
 * A `chat.completion` as a `response` object. Never throws: the call is metered by then, so an odd answer
 * (no choice, no message) becomes an empty message rather than a failure.
 */
export function chatToResponse(chat: unknown, ctx: ResponsesCallContext): Json {
  const first = isObject(chat) && Array.isArray(chat.choices) ? chat.choices[0] : undefined;
  const choice = isObject(first) ? first : {};
  const message = isObject(choice.message) ? choice.message : {};
  const output: Json[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning !== null)
    output.push({
      type: 'reasoning',
      id: ctx.itemId('rs'),
      summary: [],
      content: [{ type: 'reasoning_text', text: reasoning }],
    });
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isObject) : [];
  const text = typeof message.content === 'string' ? message.content : '';
  const refusal = typeof message.refusal === 'string' && message.refusal !== '' ? message.refusal : null;
  const { status, incomplete_details } = finishStatus(choice.finish_reason);
  if (text !== '' || refusal !== null || calls.length === 0) {
    const content = refusal !== null ? [{ type: 'refusal', refusal }] : [outputText(text)];
    output.push({
      type: 'message',
      id: ctx.itemId('msg'),
      status: status === 'incomplete' ? 'incomplete' : 'completed',
      role: 'assistant',
      content,
    });
  }
  for (const call of calls) {
    const fn = isObject(call.function) ? call.function : {};
    const tool = (ctx.tools ?? new ToolNames()).client(typeof fn.name === 'string' ? fn.name : '');
    output.push(
      callItem(tool, {
        id: ctx.itemId(callPrefix(tool)),
        callId: typeof call.id === 'string' ? call.id : ctx.itemId('call'),
        text: typeof fn.arguments === 'string' ? fn.arguments : '',
        status: 'completed',
      }),
    );
  }
  return {
    ...responseEnvelope(ctx, status),
    incomplete_details,
    output,
    usage: responsesUsage(isObject(chat) ? chat.usage : undefined),
  };
}
