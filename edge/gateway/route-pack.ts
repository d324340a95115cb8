import { toServiceError } from '../../protocol/errors.ts';
import type { GatewayOp, UsageAttempt, UsageRoute } from '../../protocol/gateway.ts';
import type { SmartRoutingPort } from '../../protocol/ports/smart-route.ts';
import { ownBuffer } from '../../protocol/relay.ts';
import { parseJsonBody } from '../http/json-body.ts';
import type { RouteContext, RouteResult } from '../http/router.ts';
import { CAPPABLE, withOutputCap } from './admission.ts';
import type { CallKit } from './call-kit.ts';
import { credentialFor, pooled } from './credential-for.ts';
import type { GatewayDeps } from './deps.ts';
import { resolvePack, retryClassOf } from './smart-route.ts';

/** A call of a route pack: its name and the client's body as the JSON route read it. */
export interface PackCall {
  op: GatewayOp;
  smart: SmartRoutingPort;
  name: string;
  body: Buffer;
  maxOutput: number | null;
  json: Record<string, unknown> | null;
}

/**
 * A route pack: attempts in the decision's order, moving on only for a failure class the pack names and only
 * while nothing has reached the client (`call.result` rejects only before the head). Only the attempt whose
 * answer the client gets is metered; earlier ones are logged.
 */
export async function runPack(
  kit: CallKit,
  deps: Pick<GatewayDeps, 'priceOf' | 'log'>,
  ctx: RouteContext<unknown>,
  { op, smart, name, body, maxOutput, json }: PackCall,
): Promise<RouteResult> {
  const { keyed } = kit;
  const decision = await resolvePack(smart, op, name);
  // Every attempt's price: the reservation must hold whichever route answers; settling prices the one that did.
  const pricing = () => decision.attempts.map((a) => deps.priceOf?.(a.target.model.id) ?? null);
  const reservation = kit.admit(ctx, {
    op,
    priced: pricing,
    bodyBytes: body.length,
    maxOutput,
    packSlug: decision.slug,
    json,
    cappable: CAPPABLE.has(op),
  });
  // Without a bound in the body, each attempt gets the reserved one, in its own provider's spelling.
  const cap = reservation?.outputCap ?? null;
  const whole = cap === null ? null : (json ?? (parseJsonBody(body, ctx.req.headers['content-type']) as object));
  let aborted = false;
  ctx.onAbort(() => (aborted = true));
  let reason: string | null = null;
  // Only the last attempt is followed (metered); the ones before ride in its route for traces.
  const failed: UsageAttempt[] = [];
  for (let i = 0; ; i++) {
    const attempt = decision.attempts[i]!;
    const route: UsageRoute = {
      packSlug: decision.slug,
      routeId: attempt.routeId,
      fallback: i > 0,
      fallbackReason: reason,
      ...(failed.length > 0 && { failed: [...failed] }),
    };
    const startedAt = Date.now();
    const sent = cap === null ? ownBuffer(body) : withOutputCap(op, attempt.target.provider.kind, whole, cap);
    // A route's provider with several keys: the pool's choice; its failure cools or sets the key aside.
    const key = keyed !== null && pooled(attempt.target.provider) ? keyed.pickKey(ctx, attempt.target, json) : null;
    const start = { op, resolved: attempt.target, clientModel: name, body: sent };
    const call = kit.under(reservation, () =>
      key === null ? kit.startJson(ctx, start) : keyed!.startWith(ctx, { ...start, key }),
    );
    try {
      await call.result;
    } catch (err) {
      if (key !== null) keyed!.judge(attempt.target.provider.id, key, toServiceError(err));
      const cls = retryClassOf(err, decision.retryOn);
      if (cls !== null && !aborted && i + 1 < decision.attempts.length) {
        deps.log.info(
          {
            reqId: ctx.requestId,
            packSlug: decision.slug,
            routeId: attempt.routeId,
            modelId: attempt.target.model.id,
            reason: cls,
          },
          'route attempt failed; trying the next',
        );
        reason = cls;
        failed.push({
          routeId: attempt.routeId,
          providerId: attempt.target.provider.id,
          modelId: attempt.target.model.id,
          startedAt,
          endedAt: Date.now(),
          code: toServiceError(err).code,
        });
        continue;
      }
    }
    return kit.follow(ctx, call, {
      startedAt,
      op,
      providerId: attempt.target.provider.id,
      modelId: attempt.target.model.id,
      route,
      reservation,
      credentialId: key?.id ?? credentialFor(attempt.target.provider)?.id ?? null,
    });
  }
}
