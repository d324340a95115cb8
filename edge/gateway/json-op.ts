import type { ResolvedModel } from '../../protocol/catalog.ts';
import { GATEWAY_OPS, type GatewayOp } from '../../protocol/gateway.ts';
import { jsonText } from '../../protocol/json-text.ts';
import type { SmartRoutingPort } from '../../protocol/ports/smart-route.ts';
import { transferable } from '../../protocol/relay.ts';
import { parseJsonBody } from '../http/json-body.ts';
import { route, type RouteContext, type RouteDef, type RouteResult } from '../http/router.ts';
import { CAPPABLE, withOutputCap, type Reservation } from './admission.ts';
import type { CallKit } from './call-kit.ts';
import {
  type CountOp,
  countPlan,
  countResult,
  estimateResult,
  isCountOp,
  messagesCountBody,
  resolveForCount,
} from './count-tokens.ts';
import { credentialFor, pooled } from './credential-for.ts';
import type { RelayCall } from './relay-response.ts';
import { outputBound, readModel } from './request.ts';
import { resolveModel } from './resolve.ts';
import { runPack } from './route-pack.ts';
import type { GatewayDeps } from './deps.ts';
import { slottedBody } from './slot-affinity.ts';
import { isPackName, isPresetName, resolvePreset } from './smart-route.ts';

// A gateway route with a JSON body (docs/api.md, Endpoints): a route pack, a preset, a token count, or a model's
// call, which is the hot path. The edge reads just the model name (readModel) unless the call must change.

/** What the JSON route read of a call's body. */
interface ReadCall {
  op: GatewayOp;
  name: string;
  body: Buffer | null;
  /** The body as text when readModel kept it, for a worker that takes text. */
  text: string | null;
  /** The parsed body, where readModel parsed it whole (null: a large body, parsed only if needed). */
  value: Record<string, unknown> | null;
  maxOutput: number | null;
}

export function jsonOp(kit: CallKit, deps: GatewayDeps, op: GatewayOp): RouteDef {
  const spec = GATEWAY_OPS[op];
  return route({
    method: spec.method,
    path: spec.path,
    scope: 'inference',
    rawBody: () => 'shared',
    handle(ctx) {
      const { body, headers } = ctx.req;
      const { text, name, value, maxOutput } = readModel(body, headers['content-type'], deps.pool.arena);
      // Before the body is handed to a worker (a transfer detaches it, an arena slot is reused).
      kit.capture(ctx, typeof name === 'string' ? name : null);
      const { smart } = deps;
      if (smart && isPackName(name))
        return runPack(kit, deps, ctx, { op, smart, name, body: body!, maxOutput, json: value });
      const read = { op, name: name as string, body: body ?? null, text: text ?? null, value, maxOutput };
      if (smart && isPresetName(name)) return presetCall(kit, ctx, smart, read);
      if (isCountOp(op)) return countCall(kit, deps, ctx, op, read);
      return modelCall(kit, deps, ctx, read);
    },
  });
}

/** The whole body parsed, where readModel left it unparsed (with the prototype-key filter). */
const parsedBody = (ctx: RouteContext<unknown>, read: ReadCall) =>
  (read.value ?? parseJsonBody(read.body, ctx.req.headers['content-type'])) as Record<string, unknown>;

/** A preset merges into the body, so a large body is parsed after all. */
async function presetCall(
  kit: CallKit,
  ctx: RouteContext<unknown>,
  smart: SmartRoutingPort,
  read: ReadCall,
): Promise<RouteResult> {
  const { op, name } = read;
  const json = parsedBody(ctx, read);
  const { resolved, body: presetBody, merged } = await resolvePreset(smart, op, name, json);
  // The bound the preset and the client together name (the merged body is what goes upstream).
  const bound = outputBound(merged.max_tokens, merged.max_completion_tokens, merged.max_output_tokens);
  const reservation = kit.admit(ctx, {
    op,
    priced: resolved.model.id,
    bodyBytes: read.body?.length ?? 0,
    maxOutput: bound,
    json,
    cappable: CAPPABLE.has(op),
  });
  const cap = reservation?.outputCap ?? null;
  const sent = cap === null ? presetBody : withOutputCap(op, resolved.provider.kind, merged, cap);
  const call = kit.under(reservation, () => kit.startJson(ctx, { op, resolved, clientModel: name, body: sent }));
  return followModel(kit, ctx, call, op, resolved, reservation);
}

/** Every model is counted: by its provider, by a local tokenizer, or by an estimate (count-tokens.ts). */
function countCall(kit: CallKit, deps: GatewayDeps, ctx: RouteContext<unknown>, op: CountOp, read: ReadCall) {
  const { name } = read;
  const counted = resolveForCount(deps.catalog.current(), op, name, deps.unresolved);
  const plan = countPlan(op, counted);
  const ask = { op, priced: null, bodyBytes: 0, maxOutput: null };
  if (plan.via === 'estimate') {
    // Answered here, never upstream: still a call under `requests` limits, counted at once.
    const reservation = kit.admit(ctx, ask);
    if (reservation !== null) deps.admission!.settle(reservation, null);
    return estimateResult(op, parsedBody(ctx, read));
  }
  const sent = plan.reshaped
    ? messagesCountBody(parsedBody(ctx, read))
    : (read.text ?? deps.pool.arena?.handOff(read.body!) ?? transferable(read.body!));
  const start = () => kit.startJson(ctx, { op: plan.relayOp, resolved: counted, clientModel: name, body: sent });
  return countResult(plan, kit.run(ctx, ask, start, { providerId: counted.provider.id, modelId: counted.model.id }));
}

/** The hot path: one model's call, its body passed on as it came unless a cap or a slot must go in. */
function modelCall(kit: CallKit, deps: GatewayDeps, ctx: RouteContext<unknown>, read: ReadCall) {
  const { op, name, body, value, maxOutput } = read;
  const { headers } = ctx.req;
  const resolved = resolveModel(deps.catalog.current(), op, name, { unresolved: deps.unresolved });
  // Several usable keys: the key pool chooses, and a refused key gives way to the next (keyed-call.ts).
  if (kit.keyed !== null && pooled(resolved.provider))
    return kit.keyed.runKeyed(ctx, op, resolved, name, { body: body!, json: value, maxOutput });
  // A large body is read whole only if the loop brake asks for its last tool call (null: parse it then).
  const reservation = kit.admit(ctx, {
    op,
    priced: resolved.model.id,
    bodyBytes: body?.length ?? 0,
    maxOutput,
    json: value,
    cappable: CAPPABLE.has(op),
  });
  // `under` inline, so that no closure is made per call.
  let call: RelayCall;
  try {
    // A llama-server chat call of a session asks for the session's slot (slot-affinity.ts).
    const slotted =
      resolved.provider.kind === 'llamacpp'
        ? slottedBody(op, resolved, deps.catalog.current(), headers, () => parsedBody(ctx, read))
        : null;
    const sent =
      reservation?.outputCap != null
        ? withOutputCap(op, resolved.provider.kind, slotted ?? parsedBody(ctx, read), reservation.outputCap)
        : slotted !== null
          ? jsonText(slotted)
          : (read.text ?? deps.pool.arena?.handOff(body!) ?? transferable(body!));
    call = kit.startJson(ctx, { op, resolved, clientModel: name, body: sent });
  } catch (err) {
    if (reservation !== null) kit.release(reservation);
    throw err;
  }
  return followModel(kit, ctx, call, op, resolved, reservation);
}

/** Follows a call of one resolved model, with the provider's one key (a pooled provider's calls follow theirs). */
function followModel(
  kit: CallKit,
  ctx: RouteContext<unknown>,
  call: RelayCall,
  op: GatewayOp,
  resolved: ResolvedModel,
  reservation: Reservation | null,
): Promise<RouteResult> {
  return kit.follow(ctx, call, {
    op,
    providerId: resolved.provider.id,
    modelId: resolved.model.id,
    reservation,
    credentialId: credentialFor(resolved.provider)?.id ?? null,
  });
}
