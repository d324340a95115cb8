import { cannot, isRecord, str } from '../common.ts';
import { numberIn, refuseStateful } from '../responses-over-chat/responses-chat.ts';
import { boundedUser, MESSAGES_USER_MAX } from '../field-limits.ts';
import { planToolChoice, planTools, type ToolPlan } from '../responses-tools.ts';
import { addCacheBreakpoints } from './responses-messages-cache.ts';
import { messagesOf } from './responses-messages-input.ts';
import { messagesToolChoice, messagesTools } from './responses-messages-tools.ts';

export { messagesOf, REDACTED_PREFIX } from './responses-messages-input.ts';

// The Responses API served over the Messages API (styleB), for models whose provider speaks only Messages
// (Anthropic's): a Responses request becomes one Messages request. Stateless, as over chat: fields that name
// stored state are refused by name (responses-chat.ts). The input items are responses-messages-input.ts and
// the tools responses-tools.ts; the answer half is responses-messages-answer.ts, the stream half
// responses-messages-stream.ts; docs/api.md lists every mapping and default.

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

/** `max_tokens` and `thinking` from the output cap and the reasoning asked for. */
function outputBudget(body: Json, target: MessagesTarget): Json {
  const out: Json = {};
  const maxOutput = numberIn(body, 'max_output_tokens', 1, 1_048_576);
  const budget = budgetOf(body.reasoning);
  if (maxOutput !== undefined) out.max_tokens = Math.floor(maxOutput);
  else
    out.max_tokens =
      budget === null ? DEFAULT_MAX_TOKENS : Math.min(budget + DEFAULT_MAX_TOKENS, MAX_DEFAULT_MAX_TOKENS);
  if (budget === null) return out;
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
  return out;
}

/** The tools, tool choice and parallel-call setting of a Messages request. */
function toolFields(body: Json, plan: ToolPlan): Json {
  const out: Json = {};
  const tools = messagesTools(plan);
  if (tools.length > 0) out.tools = tools;
  const choice = messagesToolChoice(planToolChoice(body.tool_choice, plan));
  if (choice !== undefined) out.tool_choice = choice;
  if (present(body.parallel_tool_calls) && typeof body.parallel_tool_calls !== 'boolean')
    throw cannot('parallel_tool_calls', '`parallel_tool_calls` must be a boolean.');
  if (body.parallel_tool_calls === false && tools.length > 0) {
    const current = choice ?? { type: 'auto' };
    if (current.type !== 'none') out.tool_choice = { ...current, disable_parallel_tool_use: true };
  }
  return out;
}

/**
 * The Messages request for a Responses request, `model` as sent (the translator names the upstream's), and
 * the plan of its tools (what was flattened, renamed or left out), which the answer maps back with.
 */
export function responsesToMessages(body: Json, target: MessagesTarget): { request: Json; plan: ToolPlan } {
  refuseStateful(body, OVER);
  refuseFormat(body.text);
  if (present(body.top_logprobs) && body.top_logprobs !== 0)
    throw cannot('top_logprobs', 'A Messages model reports no log probabilities.');
  const plan = planTools(body.tools, target.anthropic);
  const { system, messages } = messagesOf(body.input, body.instructions, plan.names);
  const out: Json = { model: body.model, messages, ...outputBudget(body, target) };
  if (system.length > 0) out.system = system;
  // Messages' range is 0..1 where Responses' is 0..2: a value above 1 is refused rather than clipped.
  const temperature = numberIn(body, 'temperature', 0, 1);
  if (temperature !== undefined) out.temperature = temperature;
  const topP = numberIn(body, 'top_p', 0, 1);
  if (topP !== undefined) out.top_p = topP;
  Object.assign(out, toolFields(body, plan));
  const user = str(body.safety_identifier) ?? str(body.user);
  // A cut ID could merge two users; the stand-in stays one per user (field-limits.ts).
  if (user !== null && user !== '') out.metadata = { user_id: boundedUser(user, MESSAGES_USER_MAX) };
  if (present(body.stream) && typeof body.stream !== 'boolean') throw cannot('stream', '`stream` must be a boolean.');
  if (body.stream === true) out.stream = true;
  if (typeof body.prompt_cache_key === 'string' && body.prompt_cache_key !== '') addCacheBreakpoints(out);
  return { request: out, plan };
}

/** The Messages request alone, for a target that is not Anthropic's own API (token counting). */
export function responsesToMessagesRequest(body: Json, target: MessagesTarget = { anthropic: false }): Json {
  return responsesToMessages(body, target).request;
}
