import { createHash } from 'node:crypto';
import { cannot, isRecord } from './common.ts';

// The tools of a Responses request as a chat-completions or Messages upstream takes them (docs/api.md,
// "Responses over chat completions" and "Responses over Messages"): function tools as they are; the function
// and custom tools of a `namespace` flattened into tools of their own; custom (freeform) tools as functions
// of one string; OpenAI's web search kept aside for an upstream that runs its own; every other tool left out
// and named, never refused. Each name the upstream sees keeps both targets' rule, and ToolNames maps the
// upstream's calls back to the client's tool (its namespace and kind) and the client's history forward.

type Json = Record<string, unknown>;

/** Anthropic's tool names and OpenAI's function names, as both references give them. */
export const TOOL_NAME_RULE = /^[a-zA-Z0-9_-]{1,64}$/;
const TOOL_NAME_MAX = 64;
/** Between a namespace and its tool in a flattened name: `multi_agent_v1__spawn_agent`. */
export const NAMESPACE_JOIN = '__';
/** The one string parameter a custom tool's input travels in. */
export const CUSTOM_INPUT = 'input';
/** Every spelling of OpenAI's web search tool; the dated ones are snapshots of the same tool. */
const WEB_SEARCH_TYPES = new Set([
  'web_search',
  'web_search_2025_08_26',
  'web_search_preview',
  'web_search_preview_2025_03_11',
]);
/** The name an upstream's own web search tool takes (Anthropic's is always `web_search`). */
export const WEB_SEARCH_NAME = 'web_search';

/** The client's tool behind an upstream tool name. */
export interface ClientTool {
  name: string;
  /** The namespace tool it came from; null for a top-level tool. */
  namespace: string | null;
  kind: 'function' | 'custom';
}

/** A tool as both upstream protocols take it, before each spells it (`input_schema`, `function.parameters`). */
export interface UpstreamTool {
  name: string;
  description?: string;
  /** The client's JSON schema, as sent; absent when the client gave none. */
  parameters?: unknown;
  strict?: boolean;
}

export interface ToolPlan {
  tools: UpstreamTool[];
  /** The client's web search tool, when one was given and the upstream runs its own. */
  webSearch: Json | null;
  /** The types of the tools left out, in the client's order, each once. */
  omitted: string[];
  names: ToolNames;
}

const digest = (value: string) => createHash('sha256').update(value).digest('hex');
const keyOf = (name: string, namespace: string | null) => `${namespace ?? ''}\u0000${name}`;

/**
 * A name within the rule: the qualified name when it fits; else (or when `salt` asks for another) its first
 * 55 characters with every other character as `_`, then `_` and 8 hex digits of the SHA-256 of the name.
 */
function fitted(qualified: string, salt: number): string {
  if (salt === 0 && TOOL_NAME_RULE.test(qualified)) return qualified;
  const clean = qualified.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, TOOL_NAME_MAX - 9);
  return `${clean}_${digest(salt === 0 ? qualified : `${qualified}#${salt}`).slice(0, 8)}`;
}

const qualify = (name: string, namespace: string | null) =>
  namespace === null ? name : `${namespace}${NAMESPACE_JOIN}${name}`;

/** Upstream tool names and the client's tools behind them, both ways, for one call. */
export class ToolNames {
  private readonly byUpstream = new Map<string, ClientTool>();
  private readonly byClient = new Map<string, string>();
  private readonly taken = new Set<string>();

  /** A name the upstream defines itself (its web search tool): no client tool gets it. */
  reserve(name: string): void {
    this.taken.add(name);
  }

  /** Names a client tool; a name already taken (or reserved) gets the hashed form, deterministically. */
  add(tool: ClientTool): string {
    const qualified = qualify(tool.name, tool.namespace);
    let salt = 0;
    let name = fitted(qualified, salt);
    while (this.taken.has(name)) name = fitted(qualified, ++salt);
    this.taken.add(name);
    this.byUpstream.set(name, tool);
    this.byClient.set(keyOf(tool.name, tool.namespace), name);
    return name;
  }

  has(name: string, namespace: string | null): boolean {
    return this.byClient.has(keyOf(name, namespace));
  }

  /** The upstream name of a client's tool; one not offered in this call is named as it would have been. */
  upstream(name: string, namespace: string | null): string {
    return this.byClient.get(keyOf(name, namespace)) ?? fitted(qualify(name, namespace), 0);
  }

  /** The client's tool an upstream call names; an unknown name is a top-level function of that name. */
  client(upstream: string): ClientTool {
    return this.byUpstream.get(upstream) ?? { name: upstream, namespace: null, kind: 'function' };
  }
}

/** A custom tool as a function of one string: its format (a grammar) goes to the model in words. */
function customParameters(tool: Json): Json {
  const format = isRecord(tool.format) ? tool.format : {};
  let description = 'The input to the tool, as free text.';
  if (format.type === 'grammar' && typeof format.definition === 'string') {
    const syntax = typeof format.syntax === 'string' ? format.syntax : 'lark';
    description = `The input to the tool. It must match this ${syntax} grammar:\n${format.definition}`;
  }
  return {
    type: 'object',
    properties: { [CUSTOM_INPUT]: { type: 'string', description } },
    required: [CUSTOM_INPUT],
    additionalProperties: false,
  };
}

function descriptionOf(tool: Json, context: string | null): string | undefined {
  const own = typeof tool.description === 'string' ? tool.description : undefined;
  if (context === null) return own;
  return own === undefined ? context : `${context}\n\n${own}`;
}

function nameOf(tool: Json, at: string): string {
  if (typeof tool.name !== 'string' || tool.name === '') throw cannot(`${at}.name`, 'A tool needs a `name`.');
  return tool.name;
}

/** A function or custom tool's description and parameters; its name is the caller's to assign. */
function upstreamTool(tool: Json, context: string | null): Omit<UpstreamTool, 'name'> {
  const out: Omit<UpstreamTool, 'name'> = {};
  const description = descriptionOf(tool, context);
  if (description !== undefined) out.description = description;
  if (tool.type === 'custom') out.parameters = customParameters(tool);
  else {
    if (tool.parameters !== undefined && tool.parameters !== null) out.parameters = tool.parameters;
    if (typeof tool.strict === 'boolean') out.strict = tool.strict;
  }
  return out;
}

const isCallable = (tool: unknown): tool is Json =>
  isRecord(tool) && (tool.type === 'function' || tool.type === 'custom');

/** A tool's type, checked: a type the translation does not know is left out, a missing one is a mistake. */
function typeOf(tool: unknown, at: string): string {
  if (!isRecord(tool)) throw cannot(at, 'A tool must be an object.');
  if (typeof tool.type !== 'string' || tool.type === '') throw cannot(`${at}.type`, 'A tool needs a `type`.');
  return tool.type;
}

/**
 * The plan for a request's `tools`. `webSearch`: the upstream runs its own web search, so OpenAI's is kept
 * (as `plan.webSearch`) rather than left out. Top-level tools are named first, so that they keep the
 * client's own names; a namespace's tools are `<namespace>__<name>` within the rule.
 */
export function planTools(tools: unknown, webSearch: boolean): ToolPlan {
  const plan: ToolPlan = { tools: [], webSearch: null, omitted: [], names: new ToolNames() };
  if (tools === undefined || tools === null) return plan;
  if (!Array.isArray(tools)) throw cannot('tools', '`tools` must be an array.');
  const types = tools.map((tool: unknown, i) => typeOf(tool, `tools[${i}]`));
  if (webSearch && types.some((t) => WEB_SEARCH_TYPES.has(t))) plan.names.reserve(WEB_SEARCH_NAME);
  const named = new Map<number, string>();
  tools.forEach((tool: unknown, i) => {
    if (!isCallable(tool)) return;
    const name = nameOf(tool, `tools[${i}]`);
    if (plan.names.has(name, null)) throw cannot(`tools[${i}].name`, 'Two tools have this name.');
    named.set(i, plan.names.add({ name, namespace: null, kind: tool.type === 'custom' ? 'custom' : 'function' }));
  });
  const omit = (type: string) => {
    if (!plan.omitted.includes(type)) plan.omitted.push(type);
  };
  tools.forEach((tool: unknown, i) => {
    const type = types[i]!;
    if (isCallable(tool)) plan.tools.push({ name: named.get(i)!, ...upstreamTool(tool, null) });
    else if (type === 'namespace') namespaceTools(tool as Json, `tools[${i}]`, plan, omit);
    else if (WEB_SEARCH_TYPES.has(type) && webSearch) plan.webSearch ??= tool as Json;
    else omit(type);
  });
  return plan;
}

function namespaceTools(tool: Json, at: string, plan: ToolPlan, omit: (type: string) => void): void {
  const namespace = tool.name;
  if (typeof namespace !== 'string' || namespace === '') throw cannot(`${at}.name`, 'A namespace needs a `name`.');
  if (!Array.isArray(tool.tools)) throw cannot(`${at}.tools`, "A namespace's `tools` must be an array.");
  const context = typeof tool.description === 'string' && tool.description !== '' ? tool.description : null;
  tool.tools.forEach((inner: unknown, j) => {
    const innerAt = `${at}.tools[${j}]`;
    const type = typeOf(inner, innerAt);
    if (!isCallable(inner)) return omit(type);
    const name = nameOf(inner, innerAt);
    if (plan.names.has(name, namespace)) throw cannot(`${innerAt}.name`, 'Two tools of this namespace have this name.');
    const kind = inner.type === 'custom' ? 'custom' : 'function';
    plan.tools.push({ name: plan.names.add({ name, namespace, kind }), ...upstreamTool(inner, context) });
  });
}

/** The neutral tool choice each upstream spells its own way; undefined sends none. */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string } | undefined;

/**
 * `tool_choice` against the plan. A choice of a function or custom tool names its upstream tool; a choice of
 * a built-in tool (web search, file search...) becomes `auto`, since the built-in is left out or, where the
 * upstream runs its own web search, the model decides; with no tool left upstream, no choice is sent.
 */
export function planToolChoice(choice: unknown, plan: ToolPlan): ToolChoice {
  if (choice === undefined || choice === null) return undefined;
  if (plan.tools.length === 0 && plan.webSearch === null) return undefined;
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (isRecord(choice) && (choice.type === 'function' || choice.type === 'custom') && typeof choice.name === 'string') {
    const namespace = typeof choice.namespace === 'string' ? choice.namespace : null;
    return { name: plan.names.upstream(choice.name, namespace) };
  }
  if (isRecord(choice) && typeof choice.type === 'string' && BUILT_IN_CHOICES.has(choice.type)) return 'auto';
  throw cannot(
    'tool_choice',
    '`tool_choice` is auto, none, required, a function or custom tool by name, or a built-in tool.',
  );
}

/** Tool choices that name one of OpenAI's built-in tools rather than a tool of the request. */
const BUILT_IN_CHOICES = new Set([
  ...WEB_SEARCH_TYPES,
  'file_search',
  'code_interpreter',
  'image_generation',
  'computer_use_preview',
  'computer_use',
  'mcp',
  'local_shell',
  'shell',
  'apply_patch',
]);

/** A custom tool call's input from the upstream's arguments: `{input: "..."}`, leniently. */
export function customInput(argumentsText: string): string {
  try {
    const parsed: unknown = JSON.parse(argumentsText);
    if (isRecord(parsed)) {
      if (typeof parsed[CUSTOM_INPUT] === 'string') return parsed[CUSTOM_INPUT] as string;
      const strings = Object.values(parsed).filter((v): v is string => typeof v === 'string');
      if (strings.length === 1) return strings[0]!;
    }
    return typeof parsed === 'string' ? parsed : argumentsText;
  } catch {
    return argumentsText;
  }
}

/** The arguments a custom tool call goes back upstream with, from its `input`. */
export const customArguments = (input: string): Json => ({ [CUSTOM_INPUT]: input });

/**
 * One call the model made, as the client's output item: a `function_call` (with `namespace` when its tool
 * came from one, as OpenAI returns a namespaced call) or a `custom_tool_call` with its `input`.
 */
export function callItem(tool: ClientTool, fields: { id: string; callId: string; text: string; status: string }): Json {
  const item: Json =
    tool.kind === 'custom'
      ? { type: 'custom_tool_call', id: fields.id, call_id: fields.callId }
      : { type: 'function_call', id: fields.id, call_id: fields.callId };
  if (tool.namespace !== null) item.namespace = tool.namespace;
  item.name = tool.name;
  if (tool.kind === 'custom') item.input = customInput(fields.text);
  else item.arguments = fields.text;
  item.status = fields.status;
  return item;
}

/** The item-ID prefix of a call of this tool (`fc_...`, `ctc_...`). */
export const callPrefix = (tool: ClientTool): string => (tool.kind === 'custom' ? 'ctc' : 'fc');

const HEADER_NAMES_MAX = 16;
const HEADER_NAME_MAX = 64;

/** The `switchyard-omitted-tools` value: at most 16 names of at most 64 safe characters, then `+<n>`. */
export function omittedHeaderValue(omitted: readonly string[]): string {
  const names = [...new Set(omitted.map((t) => t.replace(/[^a-zA-Z0-9_.:-]/g, '_').slice(0, HEADER_NAME_MAX)))];
  const shown = names.slice(0, HEADER_NAMES_MAX);
  if (names.length > HEADER_NAMES_MAX) shown.push(`+${names.length - HEADER_NAMES_MAX}`);
  return shown.join(',');
}
