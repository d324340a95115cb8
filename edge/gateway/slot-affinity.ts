import type { Catalog, ResolvedModel } from '../../protocol/catalog.ts';
import { FNV_SEEDS, fnv1a } from '../../protocol/fnv.ts';
import type { GatewayOp } from '../../protocol/gateway.ts';
import { affinitySession } from './affinity-session.ts';

// Slot affinity for llama-server (W4.2 item 4; docs/api.md, Local runtimes: slot affinity): a session's chat
// calls ask for one slot (`id_slot`) with `cache_prompt`, so that its next turn finds its prompt still in that
// slot's cache instead of whichever slot was idle. The slot is a hash of the provider and the session over the
// server's parallel slots (GET /props, read with its model list): the same on every edge thread and after a
// restart, with no table to bound. Where the slots are unknown, or the call names no session, nothing changes.

/** The slot of `session` among `slots`: stable, spread by FNV-1a. */
export function slotOf(providerId: string, session: string, slots: number): number {
  return fnv1a(`${providerId}|${session}`, FNV_SEEDS[0]) % slots;
}

/**
 * The body a llama-server chat call sends with its session's slot, or null when affinity does not apply: another
 * kind or operation, slots unknown, no session, or a client that chose its slot itself.
 */
export function slottedBody(
  op: GatewayOp,
  resolved: ResolvedModel,
  catalog: Pick<Catalog, 'slotsOf'>,
  headers: Readonly<Record<string, string | undefined>>,
  json: () => Record<string, unknown>,
): Record<string, unknown> | null {
  if (resolved.provider.kind !== 'llamacpp' || op !== 'chat.completions') return null;
  const slots = catalog.slotsOf(resolved.provider.id);
  if (slots === null) return null;
  const body = json();
  if (body.id_slot !== undefined) return null;
  const session = affinitySession(headers, (name) => body[name]);
  if (session === null) return null;
  return { ...body, id_slot: slotOf(resolved.provider.id, session, slots), cache_prompt: true };
}
