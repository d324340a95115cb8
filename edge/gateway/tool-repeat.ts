import { FNV_SEEDS, fnv1a } from '../../protocol/fnv.ts';
import type { GatewayOp } from '../../protocol/gateway.ts';

// What the loop brake compares (docs/api.md, Limits): a call's last tool call, the one the agent is answering
// with this call. OpenAI-style chat: the last assistant message's `tool_calls`; Anthropic-style messages: the
// last assistant message's `tool_use` blocks; responses: the `function_call` items after the last message. The
// signature is a hash of their names and arguments as sent; the name alone is kept for people (bounded).

const TOOL_NAME_MAX = 64;

export interface ToolCallSignature {
  signature: string;
  tool: string;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v ?? null));

function lastAssistant(messages: unknown): Json | null {
  if (!Array.isArray(messages)) return null;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isObject(m) && m.role === 'assistant') return m;
  }
  return null;
}

/** Name and arguments of each tool call of the call's last turn, in order; empty when it has none. */
function calls(op: GatewayOp, body: Json): [string, string][] {
  if (op === 'chat.completions') {
    const m = lastAssistant(body.messages);
    if (!m || !Array.isArray(m.tool_calls)) return [];
    return m.tool_calls.filter(isObject).map((c) => {
      const f = isObject(c.function) ? c.function : {};
      return [str(f.name), str(f.arguments)];
    });
  }
  if (op === 'messages') {
    const m = lastAssistant(body.messages);
    if (!m || !Array.isArray(m.content)) return [];
    return m.content.filter((b) => isObject(b) && b.type === 'tool_use').map((b) => [str(b.name), str(b.input)]);
  }
  if (op === 'responses.create' && Array.isArray(body.input)) {
    const out: [string, string][] = [];
    for (let i = body.input.length - 1; i >= 0; i--) {
      const item = body.input[i];
      if (!isObject(item)) continue;
      if (item.type === 'function_call') out.unshift([str(item.name), str(item.arguments)]);
      else if (item.type === 'message' || item.role !== undefined) break;
    }
    return out;
  }
  return [];
}

/** A 64-bit signature from any length of arguments: two FNV-1a runs, as hex. */
const hash = (text: string): string =>
  FNV_SEEDS.map((seed) => fnv1a(text, seed).toString(16).padStart(8, '0')).join('');

/** The signature of the call's last tool call(s), or null when its last turn called no tool. */
export function lastToolCall(op: GatewayOp, body: Json | null): ToolCallSignature | null {
  if (body === null) return null;
  const found = calls(op, body);
  if (found.length === 0) return null;
  const tool = found.map(([name]) => name).join(',');
  return {
    signature: hash(found.map(([name, args]) => `${name}\u0000${args}`).join('\u0001')),
    tool: tool.slice(0, TOOL_NAME_MAX).replace(/[^A-Za-z0-9._:,-]/g, '_'),
  };
}
