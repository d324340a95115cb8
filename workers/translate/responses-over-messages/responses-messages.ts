import { argumentsObject, cannot, imageSourceOf, isRecord, str } from '../common.ts';
import { numberIn, refuseStateful } from '../responses-over-chat/responses-chat.ts';
import { boundedUser, MESSAGES_USER_MAX } from '../field-limits.ts';
import { addCacheBreakpoints } from './responses-messages-cache.ts';

// The Responses API served over the Messages API (styleB), for models whose provider speaks only Messages
// (Anthropic's): a Responses request becomes one Messages request. Stateless, as over chat: fields that name
// stored state are refused by name (responses-chat.ts). The answer half is responses-messages-answer.ts,
// the stream half responses-messages-stream.ts; docs/api.md lists every mapping and default.

type Json = Record<string, unknown>;

const present = (v: unknown): boolean => v !== undefined && v !== null;
const OVER = 'the Messages API';

/** Messages requires max_tokens and Responses does not: the room left for the visible answer. */
export const DEFAULT_MAX_TOKENS = 4096;
/** The largest default sent: every Messages model that thinks can produce this many tokens (Opus 4's limit). */
export const MAX_DEFAULT_MAX_TOKENS = 32_000;
/** Messages' smallest thinking budget. */
export const MIN_THINKING_BUDGET = 1024;

/**
 * `reasoning.effort` as a thinking budget, in tokens. Messages asks for a budget where Responses asks for an
 * effort; each step roughly doubles, and the largest stays below MAX_DEFAULT_MAX_TOKENS with room to answer.
 */
export const EFFORT_BUDGETS: Record<string, number> = {
  minimal: 1024,
  low: 4096,
  medium: 8192,
  high: 16_384,
  xhigh: 24_576,
  max: 28_672,
};

/**
 * A reasoning item's `encrypted_content` carries a thinking block's signature as it is (base64, never a colon);
 * a redacted_thinking block's data travels behind this prefix so that it goes back as the same block type.
 */
export const REDACTED_PREFIX = 'redacted_thinking:';

function textPart(part: Json, param: string): string {
  if (
    (part.type === 'input_text' || part.type === 'output_text' || part.type === 'text') &&
    typeof part.text === 'string'
  )
    return part.text;
  if (part.type === 'refusal' && typeof part.refusal === 'string') return part.refusal;
  throw cannot(`${param}.type`, `A \`${String(part.type).slice(0, 40)}\` part cannot be sent to a Messages model.`);
}

function imageBlock(part: Json, param: string): Json {
  if (typeof part.image_url !== 'string')
    throw cannot(
      `${param}.image_url`,
      'Only images given by `image_url` (a base64 `data:` URL or an http URL) translate to a Messages model.',
    );
  return { type: 'image', source: imageSourceOf(part.image_url, `${param}.image_url`) };
}

/** Content parts as Messages blocks; images only where Messages takes them (user turns, tool results). */
function blocksOf(content: unknown, param: string, images: boolean): Json[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw cannot(param, 'Message content must be a string or an array of content parts.');
  const blocks: Json[] = [];
  content.forEach((part: unknown, i) => {
    const at = `${param}[${i}]`;
    if (!isRecord(part)) throw cannot(at, 'A content part must be an object.');
    if (images && part.type === 'input_image') blocks.push(imageBlock(part, at));
    else {
      // Messages refuses empty text blocks; an empty part carries nothing.
      const text = textPart(part, at);
      if (text !== '') blocks.push({ type: 'text', text });
    }
  });
  return blocks;
}

function systemText(content: unknown, param: string): string {
  return blocksOf(content, param, false)
    .map((b) => b.text as string)
    .join('');
}

/** A reasoning item handed back, as the thinking block it came from; null when it carries no signature. */
function thinkingBlock(item: Json): Json | null {
  const signature = str(item.encrypted_content);
  if (signature === null || signature === '') return null;
  if (signature.startsWith(REDACTED_PREFIX))
    return { type: 'redacted_thinking', data: signature.slice(REDACTED_PREFIX.length) };
  const texts = (list: unknown, type: string) =>
    Array.isArray(list)
      ? list.filter((p): p is Json => isRecord(p) && p.type === type).map((p) => str(p.text) ?? '')
      : [];
  // The signature covers the thinking text exactly: the summary this translation wrote is that text.
  const content = texts(item.content, 'reasoning_text');
  return {
    type: 'thinking',
    thinking: (content.length > 0 ? content : texts(item.summary, 'summary_text')).join(''),
    signature,
  };
}

function toolResult(item: Json, at: string): Json {
  if (typeof item.call_id !== 'string' || item.call_id === '')
    throw cannot(`${at}.call_id`, 'A function call output needs its `call_id`.');
  const output = item.output;
  if (typeof output === 'string') return { type: 'tool_result', tool_use_id: item.call_id, content: output };
  if (!Array.isArray(output)) throw cannot(`${at}.output`, '`output` must be a string or an array of content parts.');
  return { type: 'tool_result', tool_use_id: item.call_id, content: blocksOf(output, `${at}.output`, true) };
}

/** Consecutive turns of one role join: parallel tool results must share the user turn after the calls. */
function push(messages: Json[], role: 'user' | 'assistant', blocks: Json[]): void {
  if (blocks.length === 0) return;
  const last = messages.at(-1);
  if (last !== undefined && last.role === role) (last.content as Json[]).push(...blocks);
  else messages.push({ role, content: blocks });
}

/** `instructions`, then system and developer messages wherever they stand, as Messages' `system`. */
export function messagesOf(input: unknown, instructions: unknown): { system: Json[]; messages: Json[] } {
  const system: Json[] = [];
  const messages: Json[] = [];
  if (present(instructions)) {
    if (typeof instructions !== 'string') throw cannot('instructions', '`instructions` must be a string.');
    if (instructions !== '') system.push({ type: 'text', text: instructions });
  }
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: [{ type: 'text', text: input }] });
    return { system, messages };
  }
  if (!Array.isArray(input) || input.length === 0)
    throw cannot('input', '`input` must be a string or a non-empty array of input items.');
  input.forEach((item: unknown, i) => {
    const at = `input[${i}]`;
    if (!isRecord(item)) throw cannot(at, 'An input item must be an object.');
    switch (item.type ?? 'message') {
      case 'message': {
        const content = item.content;
        if (item.role === 'system' || item.role === 'developer') {
          const text = systemText(content, `${at}.content`);
          if (text !== '') system.push({ type: 'text', text });
        } else if (item.role === 'user') push(messages, 'user', blocksOf(content, `${at}.content`, true));
        else if (item.role === 'assistant') push(messages, 'assistant', blocksOf(content, `${at}.content`, false));
        else throw cannot(`${at}.role`, 'A message role is user, assistant, system or developer.');
        return;
      }
      case 'function_call': {
        if (typeof item.call_id !== 'string' || item.call_id === '')
          throw cannot(`${at}.call_id`, 'A function call needs its `call_id`.');
        if (typeof item.name !== 'string' || item.name === '')
          throw cannot(`${at}.name`, 'A function call needs its `name`.');
        if (typeof item.arguments !== 'string')
          throw cannot(`${at}.arguments`, "A function call's `arguments` is a JSON string.");
        push(messages, 'assistant', [
          {
            type: 'tool_use',
            id: item.call_id,
            name: item.name,
            input: argumentsObject(item.arguments, `${at}.arguments`),
          },
        ]);
        return;
      }
      case 'function_call_output':
        push(messages, 'user', [toolResult(item, at)]);
        return;
      case 'reasoning': {
        // Without its signature a thinking block is refused upstream: such an item is dropped.
        const block = thinkingBlock(item);
        if (block !== null) push(messages, 'assistant', [block]);
        return;
      }
      case 'item_reference':
        throw cannot(`${at}.type`, 'Item references name stored items; models served over the Messages API keep none.');
      default:
        throw cannot(
          `${at}.type`,
          'Input items are messages, function calls, function call outputs and reasoning items here.',
        );
    }
  });
  return { system, messages };
}

function toolsOf(tools: unknown): Json[] {
  if (!Array.isArray(tools)) throw cannot('tools', '`tools` must be an array.');
  return tools.map((tool: unknown, i) => {
    if (!isRecord(tool) || tool.type !== 'function')
      throw cannot(
        `tools[${i}].type`,
        "Only function tools translate to a Messages model; built-in tools run only on OpenAI's servers.",
      );
    if (typeof tool.name !== 'string' || tool.name === '')
      throw cannot(`tools[${i}].name`, 'A function tool needs a `name`.');
    const out: Json = { name: tool.name };
    if (typeof tool.description === 'string') out.description = tool.description;
    out.input_schema = isRecord(tool.parameters) ? tool.parameters : { type: 'object', properties: {} };
    return out;
  });
}

function toolChoiceOf(choice: unknown): Json {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  if (isRecord(choice) && choice.type === 'function' && typeof choice.name === 'string')
    return { type: 'tool', name: choice.name };
  throw cannot('tool_choice', '`tool_choice` is auto, none, required or a function by name for a Messages model.');
}

/** `reasoning.summary` values: the first three ask for a summary of the model's reasoning. */
const SUMMARIES = new Set(['auto', 'concise', 'detailed', 'none']);

/** Whether `reasoning.summary` asks for a summary (auto, concise, detailed). */
function summaryAsked(reasoning: unknown): boolean {
  const summary = isRecord(reasoning) ? reasoning.summary : undefined;
  if (!present(summary)) return false;
  if (typeof summary !== 'string' || !SUMMARIES.has(summary))
    throw cannot('reasoning.summary', '`reasoning.summary` is auto, concise, detailed or none.');
  return summary !== 'none';
}

/**
 * The thinking budget `reasoning` asks for; null for none. A summary asked for without an effort thinks at
 * `medium`, OpenAI's default effort for its reasoning models: a summary exists only where the model thinks.
 */
function budgetOf(reasoning: unknown): number | null {
  if (!present(reasoning)) return null;
  if (!isRecord(reasoning)) throw cannot('reasoning', '`reasoning` must be an object.');
  const effort = present(reasoning.effort) ? reasoning.effort : summaryAsked(reasoning) ? 'medium' : 'none';
  if (effort === 'none') return null;
  const budget = typeof effort === 'string' ? EFFORT_BUDGETS[effort] : undefined;
  if (budget === undefined)
    throw cannot('reasoning.effort', '`reasoning.effort` is none, minimal, low, medium, high, xhigh or max.');
  return budget;
}

function refuseFormat(text: unknown): void {
  if (!present(text)) return;
  if (!isRecord(text)) throw cannot('text', '`text` must be an object.');
  const format = text.format;
  if (!present(format) || (isRecord(format) && format.type === 'text')) return;
  throw cannot('text.format.type', 'Only `text.format: {type: "text"}` translates to a Messages model.');
}

/** What the upstream behind the Messages API is: Anthropic's own API runs its web search and thinking display. */
export interface MessagesTarget {
  anthropic: boolean;
}

/** The Messages request for a Responses request, `model` as sent (the translator names the upstream's). */
export function responsesToMessagesRequest(body: Json, target: MessagesTarget = { anthropic: false }): Json {
  refuseStateful(body, OVER);
  refuseFormat(body.text);
  if (present(body.top_logprobs) && body.top_logprobs !== 0)
    throw cannot('top_logprobs', 'A Messages model reports no log probabilities.');
  const { system, messages } = messagesOf(body.input, body.instructions);
  const out: Json = { model: body.model, messages };
  const maxOutput = numberIn(body, 'max_output_tokens', 1, 1_048_576);
  const budget = budgetOf(body.reasoning);
  if (maxOutput !== undefined) out.max_tokens = Math.floor(maxOutput);
  else
    out.max_tokens =
      budget === null ? DEFAULT_MAX_TOKENS : Math.min(budget + DEFAULT_MAX_TOKENS, MAX_DEFAULT_MAX_TOKENS);
  if (budget !== null) {
    // Both count thinking inside the output cap; Messages wants the budget below it.
    const fitted = Math.min(budget, (out.max_tokens as number) - 1);
    if (fitted < MIN_THINKING_BUDGET)
      throw cannot(
        'max_output_tokens',
        `With \`reasoning\`, \`max_output_tokens\` must exceed ${MIN_THINKING_BUDGET}: a Messages model thinks with ` +
          `at least that budget.`,
      );
    const thinking: Json = { type: 'enabled', budget_tokens: fitted };
    // Anthropic's newer models return no thinking text unless asked; a summary asked for is that text.
    if (target.anthropic && summaryAsked(body.reasoning)) thinking.display = 'summarized';
    out.thinking = thinking;
  }
  if (system.length > 0) out.system = system;
  // Messages' range is 0..1 where Responses' is 0..2: a value above 1 is refused rather than clipped.
  const temperature = numberIn(body, 'temperature', 0, 1);
  if (temperature !== undefined) out.temperature = temperature;
  const topP = numberIn(body, 'top_p', 0, 1);
  if (topP !== undefined) out.top_p = topP;
  const tools = present(body.tools) ? toolsOf(body.tools) : [];
  if (tools.length > 0) out.tools = tools;
  if (present(body.tool_choice)) out.tool_choice = toolChoiceOf(body.tool_choice);
  if (present(body.parallel_tool_calls) && typeof body.parallel_tool_calls !== 'boolean')
    throw cannot('parallel_tool_calls', '`parallel_tool_calls` must be a boolean.');
  if (body.parallel_tool_calls === false && tools.length > 0) {
    const choice = (out.tool_choice as Json | undefined) ?? { type: 'auto' };
    if (choice.type !== 'none') out.tool_choice = { ...choice, disable_parallel_tool_use: true };
  }
  const user = str(body.safety_identifier) ?? str(body.user);
  // A cut ID could merge two users; the stand-in stays one per user (field-limits.ts).
  if (user !== null && user !== '') out.metadata = { user_id: boundedUser(user, MESSAGES_USER_MAX) };
  if (present(body.stream) && typeof body.stream !== 'boolean') throw cannot('stream', '`stream` must be a boolean.');
  if (body.stream === true) out.stream = true;
  if (typeof body.prompt_cache_key === 'string' && body.prompt_cache_key !== '') addCacheBreakpoints(out);
  return out;
}
