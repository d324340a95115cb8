import { randomBytes } from 'node:crypto';
import type { ChatHistoryItem, ChatModelFunctions, GbnfJsonSchema, LlamaGrammar, LlamaModel } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { GenerateParams, Generated } from './generate.ts';

// Tools on the embedded runtime. A call that must call a tool (styleA tool_choice `required` or a named
// function, styleB `any` or `tool`) is generated under a grammar built from the tools' JSON schemas, so the
// answer is a schema-valid call whatever the model's weights; a call that may call one (`auto`) offers the
// tools through node-llama-cpp's function calling, which renders them with the model's chat template, and the
// model decides; `none` generates text. Earlier calls and their results go back into the chat history as
// function calls, rendered by the same template.

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_TOOLS = 128;
const MAX_DEPTH = 12;

export interface ToolDef {
  name: string;
  description: string | undefined;
  schema: GbnfJsonSchema;
}

/** `none`: text only; `auto`: the model may call; `required`: it must call one of them; `{name}`: that one. */
export type ToolChoice = 'none' | 'auto' | 'required' | { name: string };

export interface ToolRequest {
  tools: ToolDef[];
  choice: ToolChoice;
}

export interface ToolCallOut {
  id: string;
  name: string;
  arguments: unknown;
}

const KEEP = new Set([
  'type',
  'properties',
  'required',
  'items',
  'enum',
  'const',
  'description',
  'minItems',
  'maxItems',
  'additionalProperties',
  'oneOf',
  'minLength',
  'maxLength',
  'format',
]);
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);

/**
 * A client's JSON schema as the grammar builder's subset: keywords it does not know (`title`, `default`,
 * `$schema`, `minimum`...) constrain nothing the grammar can enforce and are dropped; `anyOf` is read as
 * `oneOf`; `$ref` and other structure it cannot express is a 400 naming the place.
 */
export function grammarSchema(schema: unknown, param: string, depth = 0): GbnfJsonSchema {
  if (depth > MAX_DEPTH) throw invalid(param, `The schema nests deeper than ${MAX_DEPTH} levels.`);
  if (schema === true || (typeof schema === 'object' && schema !== null && Object.keys(schema).length === 0)) {
    return { type: ['string', 'number', 'boolean', 'null'] } as GbnfJsonSchema;
  }
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    throw invalid(param, 'A JSON schema must be an object.');
  const s = schema as Record<string, unknown>;
  if ('$ref' in s || 'allOf' in s || 'not' in s)
    throw invalid(param, 'The embedded runtime takes schemas without `$ref`, `allOf` and `not`.');
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(s)) {
    if (key === 'anyOf' || key === 'oneOf') {
      if (!Array.isArray(value) || value.length === 0)
        throw invalid(`${param}.${key}`, `\`${key}\` must be a non-empty array.`);
      out.oneOf = value.map((v, i) => grammarSchema(v, `${param}.${key}[${i}]`, depth + 1));
    } else if (key === 'properties') {
      if (typeof value !== 'object' || value === null)
        throw invalid(`${param}.properties`, '`properties` must be an object.');
      out.properties = Object.fromEntries(
        Object.entries(value).map(([k, v]) => [
          k,
          grammarSchema(v, `${param}.properties.${k.slice(0, 64)}`, depth + 1),
        ]),
      );
    } else if (key === 'items') out.items = grammarSchema(value, `${param}.items`, depth + 1);
    else if (key === 'additionalProperties') {
      if (typeof value === 'object' && value !== null)
        out.additionalProperties = grammarSchema(value, `${param}.additionalProperties`, depth + 1);
      else out.additionalProperties = value === true;
    } else if (key === 'type') {
      const types = Array.isArray(value) ? value : [value];
      if (types.length === 0 || types.some((t) => typeof t !== 'string' || !TYPES.has(t)))
        throw invalid(`${param}.type`, 'An unknown JSON schema type.');
      out.type = value;
    } else if (KEEP.has(key)) out[key] = value;
  }
  // A schema with properties but no type is an object schema.
  if (out.type === undefined && out.properties !== undefined) out.type = 'object';
  if (out.type === 'object' && out.properties === undefined) out.properties = {};
  return out as GbnfJsonSchema;
}

function toolOf(name: unknown, description: unknown, schema: unknown, param: string): ToolDef {
  if (typeof name !== 'string' || !NAME.test(name))
    throw invalid(`${param}.name`, 'A tool name is 1 to 64 letters, digits, `_` or `-`.');
  return {
    name,
    description: typeof description === 'string' ? description.slice(0, 4096) : undefined,
    schema: grammarSchema(schema ?? { type: 'object', properties: {} }, `${param}.parameters`),
  };
}

function checked(tools: unknown, param: string): unknown[] | null {
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools) || tools.length > MAX_TOOLS)
    throw invalid(param, `\`${param}\` is an array of at most ${MAX_TOOLS} tools.`);
  return tools.length === 0 ? null : tools;
}

function named(choice: ToolChoice, tools: ToolDef[], param: string): ToolChoice {
  if (typeof choice === 'object' && !tools.some((t) => t.name === choice.name))
    throw invalid(param, 'tool_choice names a tool that `tools` does not define.');
  return choice;
}

/** styleA `tools` (function tools) and `tool_choice`; null when the call offers none. */
export function chatTools(body: Record<string, unknown>): ToolRequest | null {
  const list = checked(body.tools, 'tools');
  if (list === null) return null;
  const tools = list.map((t, i) => {
    const tool = t as { type?: unknown; function?: { name?: unknown; description?: unknown; parameters?: unknown } };
    if (tool?.type !== 'function' || typeof tool.function !== 'object' || tool.function === null)
      throw invalid(`tools[${i}]`, 'The embedded runtime runs `function` tools.');
    return toolOf(tool.function.name, tool.function.description, tool.function.parameters, `tools[${i}].function`);
  });
  const c = body.tool_choice as unknown;
  let choice: ToolChoice;
  if (c === undefined || c === null || c === 'auto') choice = 'auto';
  else if (c === 'none' || c === 'required') choice = c;
  else if (typeof c === 'object' && (c as { type?: unknown }).type === 'function')
    choice = { name: String((c as { function?: { name?: unknown } }).function?.name ?? '') };
  else
    throw invalid(
      'tool_choice',
      '`tool_choice` is `none`, `auto`, `required` or `{type:"function", function:{name}}`.',
    );
  return { tools, choice: named(choice, tools, 'tool_choice') };
}

/** styleB `tools` (client tools with `input_schema`) and `tool_choice`; null when the call offers none. */
export function messagesTools(body: Record<string, unknown>): ToolRequest | null {
  const list = checked(body.tools, 'tools');
  if (list === null) return null;
  const tools = list.map((t, i) => {
    const tool = t as { type?: unknown; name?: unknown; description?: unknown; input_schema?: unknown };
    if (tool?.type !== undefined && tool.type !== 'custom')
      throw invalid(
        `tools[${i}].type`,
        'The embedded runtime runs client tools (with `input_schema`), not server tools.',
      );
    return toolOf(tool?.name, tool?.description, tool?.input_schema, `tools[${i}]`);
  });
  const c = body.tool_choice as { type?: unknown; name?: unknown } | undefined | null;
  let choice: ToolChoice;
  if (c === undefined || c === null || c.type === 'auto') choice = 'auto';
  else if (c.type === 'none') choice = 'none';
  else if (c.type === 'any') choice = 'required';
  else if (c.type === 'tool') choice = { name: String(c.name ?? '') };
  else throw invalid('tool_choice', '`tool_choice.type` is `auto`, `any`, `tool` or `none`.');
  return { tools, choice: named(choice, tools, 'tool_choice') };
}

/** Whether the answer must be a call: then it is generated under `forcedGrammar`. */
export const mustCall = (req: ToolRequest | null): req is ToolRequest =>
  req !== null && req.choice !== 'none' && req.choice !== 'auto';

/**
 * A forced call is generated under a grammar, without node-llama-cpp's function calling, so the chat template
 * does not show the model the tools: a system turn at the start names them, their descriptions and schemas,
 * and the answer's shape, so that a real model's arguments mean something (token counts render it too).
 */
export function documentForced(history: ChatHistoryItem[], req: ToolRequest | null): ChatHistoryItem[] {
  if (!mustCall(req)) return history;
  const allowed =
    typeof req.choice === 'object'
      ? req.tools.filter((t) => t.name === (req.choice as { name: string }).name)
      : req.tools;
  const lines = allowed.map(
    (t) => `- ${t.name}${t.description ? `: ${t.description}` : ''}\n  arguments schema: ${JSON.stringify(t.schema)}`,
  );
  const text =
    `Answer with one call of ${allowed.length === 1 ? 'this tool' : 'one of these tools'}, as JSON ` +
    `{"name": ..., "arguments": {...}}:\n${lines.join('\n')}`;
  return [{ type: 'system', text }, ...history];
}

/** The grammar of a forced call: `{"name": <one of the tools>, "arguments": <that tool's schema>}`. */
async function forcedGrammar(model: LlamaModel, req: ToolRequest): Promise<LlamaGrammar> {
  const candidates =
    typeof req.choice === 'object'
      ? req.tools.filter((t) => t.name === (req.choice as { name: string }).name)
      : req.tools;
  const call = (t: ToolDef) =>
    ({ type: 'object', properties: { name: { const: t.name }, arguments: t.schema } }) as GbnfJsonSchema;
  const schema = candidates.length === 1 ? call(candidates[0]!) : ({ oneOf: candidates.map(call) } as GbnfJsonSchema);
  try {
    return await model.llama.createGrammarForJsonSchema(schema as never);
  } catch (err) {
    throw invalid(
      'tools',
      `The tools' schemas cannot be turned into a grammar: ${String((err as Error)?.message ?? err).slice(0, 200)}`,
    );
  }
}

/** The forced call's text as a call; null when generation stopped before the JSON closed (max tokens). */
export function parseForcedCall(text: string, idPrefix: string): ToolCallOut | null {
  try {
    const parsed = JSON.parse(text) as { name?: unknown; arguments?: unknown };
    if (typeof parsed.name !== 'string') return null;
    return { id: callId(idPrefix), name: parsed.name, arguments: parsed.arguments ?? {} };
  } catch {
    return null;
  }
}

/** The tools node-llama-cpp's function calling offers the model: only for `auto` (a forced call has a grammar). */
export function offeredFunctions(req: ToolRequest | null): ChatModelFunctions | undefined {
  if (req === null || req.choice !== 'auto') return undefined;
  return Object.fromEntries(
    req.tools.map((t) => [
      t.name,
      { ...(t.description !== undefined && { description: t.description }), params: t.schema },
    ]),
  );
}

/** A generation's parameters with its tools applied: a forced call's grammar, or the functions `auto` offers. */
export async function withTools<P extends GenerateParams & { tools: ToolRequest | null }>(
  model: LlamaModel,
  params: P,
): Promise<P> {
  if (mustCall(params.tools)) return { ...params, grammar: await forcedGrammar(model, params.tools) };
  const functions = offeredFunctions(params.tools);
  return functions === undefined ? params : { ...params, functions };
}

/**
 * The answer's tool calls (the forced call parsed from its text, or the calls function calling made), each
 * counted in the usage, and the text that is not a call. A forced call cut off by max_tokens is no call: its
 * partial text is the answer.
 */
export function answeredCalls(
  result: Generated,
  forced: boolean,
  idPrefix: string,
): { calls: ToolCallOut[]; text: string } {
  const forcedCall = forced ? parseForcedCall(result.text, idPrefix) : null;
  const calls = forcedCall
    ? [forcedCall]
    : result.functionCalls.map((c) => ({ id: callId(idPrefix), name: c.name, arguments: c.params ?? {} }));
  for (const c of calls) result.usage.toolCalls[c.name] = (result.usage.toolCalls[c.name] ?? 0) + 1;
  return { calls, text: forcedCall ? '' : result.text };
}

/** A call's ID: `call_...` for styleA, `toolu_...` for styleB, as their servers spell them. */
const callId = (prefix: string) => `${prefix}${randomBytes(12).toString('base64url')}`;
