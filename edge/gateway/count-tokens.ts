import { ServiceError } from '../../protocol/errors.ts';
import { GATEWAY_OPS, type GatewayOp } from '../../protocol/gateway.ts';
import { ADAPTERS } from '../../workers/proxy/providers/index.ts';
import { targetOf, type Catalog, type ResolvedModel } from '../../protocol/catalog.ts';
import type { RouteResult } from '../http/router.ts';
import { responsesToMessagesRequest } from '../../workers/translate/responses-over-messages/responses-messages.ts';
import { resolveModel, type UnresolvedName } from './resolve.ts';

// Token counting for every model (docs/api.md, "Token counting"): POST /v1/messages/count_tokens and
// POST /v1/responses/input_tokens. The provider's own count where its kind serves the route and the model
// lists the family; else the embedded runtime's tokenizer on the rendered prompt; else an estimate made
// here. The answer keeps the client family's shape; `x-service-token-count` says which method counted.

export const COUNT_OPS = ['messages.count_tokens', 'responses.input_tokens'] as const satisfies readonly GatewayOp[];
export type CountOp = (typeof COUNT_OPS)[number];
export const isCountOp = (op: GatewayOp): op is CountOp => (COUNT_OPS as readonly GatewayOp[]).includes(op);

export const COUNT_METHOD_HEADER = 'x-service-token-count';
export type CountMethod = 'provider' | 'tokenizer' | 'estimate';

/**
 * How a model's count is made, and under which label. `relayOp` is the operation sent upstream: the client's,
 * or for a Responses count on a Messages-only model its styleB count_tokens (`reshaped`: the body is translated there
 * and the answer back).
 */
export type CountPlan =
  | { via: 'relay'; method: CountMethod; relayOp: GatewayOp; reshaped: boolean }
  | { via: 'estimate' };

/** Bytes of text per estimated token: the usual rule of thumb for English text and BPE vocabularies. */
export const BYTES_PER_TOKEN = 4;

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The model a count names. A model that lacks the route's family is still counted when it generates text
 * through another family (a chat-only model asked for a styleB count), since counting needs no upstream.
 */
export function resolveForCount(
  catalog: Catalog,
  op: CountOp,
  name: unknown,
  unresolved?: UnresolvedName,
): ResolvedModel {
  // Only the model and its provider: a translation found through another family is no route to a count.
  const plain = ({ provider, model }: ResolvedModel): ResolvedModel => ({ provider, model });
  try {
    return plain(resolveModel(catalog, op, name, { unresolved }));
  } catch (err) {
    if (!(err instanceof ServiceError) || err.code !== 'MODEL_ENDPOINT_NOT_SUPPORTED') throw err;
    for (const other of ['chat.completions', 'messages', 'responses.create'] as const) {
      try {
        return plain(resolveModel(catalog, other, name, { unresolved }));
      } catch {
        // Not through this family either: the next one, then the original refusal.
      }
    }
    throw err;
  }
}

export function countPlan(op: CountOp, { provider, model }: ResolvedModel): CountPlan {
  // The embedded runtime counts with the model's own tokenizer and chat template (workers/runtime).
  if (provider.kind === 'embedded') return { via: 'relay', method: 'tokenizer', relayOp: op, reshaped: false };
  const serves = (o: GatewayOp) =>
    model.families.includes(GATEWAY_OPS[o].family) &&
    (ADAPTERS[provider.kind].gateway?.url(o, targetOf(provider), {}, '') ?? null) !== null;
  // llama-server's count_tokens tokenizes with the loaded model's vocabulary: a tokenizer count, not a bill.
  const method: CountMethod = provider.kind === 'llamacpp' ? 'tokenizer' : 'provider';
  if (serves(op)) return { via: 'relay', method, relayOp: op, reshaped: false };
  // Without a Responses count of its own, a Messages model's count_tokens counts a Responses body once it is
  // translated: the provider's count (or llama-server's tokenizer's), not an estimate.
  if (op === 'responses.input_tokens' && serves('messages.count_tokens')) {
    return { via: 'relay', method, relayOp: 'messages.count_tokens', reshaped: true };
  }
  return { via: 'estimate' };
}

/**
 * A Responses count body as a styleB count_tokens body, through the translation the gateway uses for
 * generation (Responses over Messages), so the count covers what a generation would send.
 */
export function messagesCountBody(body: Record<string, unknown>): string {
  // Only what reaches the prompt (stored state still refused by name): sampling, output caps and formats,
  // and thinking settings change no input token here.
  const { input, instructions, tools: given, tool_choice: choice, previous_response_id, conversation, prompt } = body;
  const prompted = {
    model: body.model,
    input,
    instructions,
    tools: given,
    tool_choice: choice,
    previous_response_id,
    conversation,
    prompt,
  };
  const { model, messages, system, tools, tool_choice } = responsesToMessagesRequest(prompted);
  return JSON.stringify({
    model,
    messages,
    ...(system !== undefined && { system }),
    ...(tools !== undefined && { tools }),
    ...(tool_choice !== undefined && { tool_choice }),
  });
}

/** A styleB count as the Responses count; an answer without a count is the provider's fault. */
async function asInputTokens(result: Promise<RouteResult>): Promise<RouteResult> {
  const r = await result;
  let count: unknown;
  try {
    count = (
      JSON.parse(typeof r.raw === 'string' ? r.raw : Buffer.from(r.raw ?? new Uint8Array()).toString('utf8')) as {
        input_tokens?: unknown;
      }
    ).input_tokens;
  } catch {
    count = undefined;
  }
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0)
    throw new ServiceError('UPSTREAM_ERROR', 'The provider answered count_tokens without a count.');
  return { status: 200, body: countAnswer('responses.input_tokens', count) };
}

/** The relayed count's answer: reshaped when the plan says so, and labelled. */
export function countResult(
  plan: Extract<CountPlan, { via: 'relay' }>,
  result: Promise<RouteResult>,
): Promise<RouteResult> {
  return labelled(plan.reshaped ? asInputTokens(result) : result, plan.method);
}

// Members whose strings are labels, IDs or encoded media rather than prompt text.
const NOT_TEXT = new Set([
  'type',
  'role',
  'id',
  'call_id',
  'tool_use_id',
  'tool_call_id',
  'data',
  'url',
  'image_url',
  'file_data',
  'file_id',
  'media_type',
  'detail',
  'status',
  'cache_control',
  'model',
]);

/** UTF-8 bytes of the prompt text under `value`, walked with a stack: a deeply nested body cannot overflow it. */
function textBytes(value: unknown): number {
  let bytes = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') bytes += Buffer.byteLength(v);
    else if (Array.isArray(v)) stack.push(...v);
    else if (isObject(v)) for (const key of Object.keys(v)) if (!NOT_TEXT.has(key)) stack.push(v[key]);
  }
  return bytes;
}

function checkTools(tools: unknown): void {
  if (tools !== undefined && tools !== null && !Array.isArray(tools))
    throw invalid('tools', '`tools` must be an array.');
}

/** The estimate's input, checked: what a count names must be there and of the right type (400 otherwise). */
function promptMembers(op: CountOp, body: Record<string, unknown>): unknown[] {
  checkTools(body.tools);
  // Tool definitions count as their JSON text: the model reads them rendered, not as separate strings.
  const tools = Array.isArray(body.tools) ? JSON.stringify(body.tools) : '';
  if (op === 'messages.count_tokens') {
    if (!Array.isArray(body.messages) || body.messages.length === 0)
      throw invalid('messages', '`messages` must be a non-empty array.');
    if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system))
      throw invalid('system', '`system` must be a string or an array of text blocks.');
    return [body.system, body.messages, tools];
  }
  for (const field of ['previous_response_id', 'conversation'] as const) {
    if (body[field] !== undefined && body[field] !== null)
      throw invalid(
        field,
        `This model's count is an estimate, made without stored state: send the whole conversation in \`input\` ` +
          `instead of \`${field}\`.`,
      );
  }
  if (typeof body.input !== 'string' && !Array.isArray(body.input))
    throw invalid('input', '`input` must be a string or an array of input items.');
  if (body.instructions !== undefined && body.instructions !== null && typeof body.instructions !== 'string')
    throw invalid('instructions', '`instructions` must be a string.');
  return [body.instructions, body.input, tools];
}

/** ceil(UTF-8 bytes of the prompt's text / BYTES_PER_TOKEN): the documented estimate. */
export function estimateTokens(op: CountOp, body: Record<string, unknown>): number {
  return Math.ceil(textBytes(promptMembers(op, body)) / BYTES_PER_TOKEN);
}

/** A count in the client family's documented shape. */
export function countAnswer(op: CountOp, inputTokens: number): Record<string, unknown> {
  return op === 'responses.input_tokens'
    ? { object: 'response.input_tokens', input_tokens: inputTokens }
    : { input_tokens: inputTokens };
}

export function estimateResult(op: CountOp, body: Record<string, unknown>): RouteResult {
  return {
    status: 200,
    body: countAnswer(op, estimateTokens(op, body)),
    headers: { [COUNT_METHOD_HEADER]: 'estimate' },
  };
}

/** A relayed count's answer, labelled; a stream or an error passes as it is. */
export async function labelled(result: Promise<RouteResult>, method: CountMethod): Promise<RouteResult> {
  const r = await result;
  if (r.stream !== undefined) return r;
  // A relayed answer's headers object is the edge's to extend (RouteResult.raw).
  const headers = r.headers ?? {};
  headers[COUNT_METHOD_HEADER] = method;
  return { ...r, headers };
}
