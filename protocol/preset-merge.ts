import type { GatewayOp } from './gateway.ts';
import { GATEWAY_OPS } from './gateway.ts';
import type { PresetView } from './http/presets.ts';
import { parametersFor } from './presets.ts';

// Steps 4-5 of the model resolution order (docs/api.md): preset defaults first, request fields last. The
// edge has already parsed the body, so the merge happens here and the worker receives the merged JSON.

/**
 * The operations whose bodies take the family's sampling parameters. Token counting and compaction take
 * only the conversation, so they get the system prompt (the count must match what a call would send) and
 * nothing else: an upstream would refuse `max_tokens` on count_tokens.
 */
const FULL_MERGE: ReadonlySet<GatewayOp> = new Set<GatewayOp>([
  'chat.completions',
  'embeddings',
  'responses.create',
  'images.generations',
  'audio.speech',
  'audio.transcriptions',
  'messages',
  'rerank',
]);

type Json = Record<string, unknown>;

/** Where each protocol carries a system prompt, unless the request already carries one. */
function withSystem(op: GatewayOp, body: Json, system: string): Json {
  const family = GATEWAY_OPS[op].family;
  if (family === 'styleA.chat_completions') {
    const messages = body.messages;
    if (!Array.isArray(messages)) return body;
    // A request's own system or developer message is its system prompt; adding ours would give the model two.
    const hasOwn = messages.some(
      (m: unknown) =>
        typeof m === 'object' && m !== null && ['system', 'developer'].includes((m as Json).role as string),
    );
    return hasOwn ? body : { ...body, messages: [{ role: 'system', content: system }, ...messages] };
  }
  if (family === 'styleA.responses')
    return 'instructions' in body && body.instructions !== null ? body : { ...body, instructions: system };
  if (family === 'styleB.messages') return 'system' in body && body.system !== null ? body : { ...body, system };
  return body;
}

export function mergePreset(op: GatewayOp, preset: PresetView, body: Json): Json {
  let merged: Json = body;
  if (FULL_MERGE.has(op)) {
    const allowed = parametersFor(GATEWAY_OPS[op].family);
    const defaults: Json = {};
    // Only the names this family takes: a chat+messages preset's `top_k` must not reach a chat upstream.
    for (const [name, value] of Object.entries(preset.parameters)) if (allowed.includes(name)) defaults[name] = value;
    merged = { ...defaults, ...body };
  }
  return preset.system === null ? merged : withSystem(op, merged, preset.system);
}
