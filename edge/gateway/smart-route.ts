import { ServiceError } from '../../protocol/errors.ts';
import { GATEWAY_OPS, type GatewayOp } from '../../protocol/gateway.ts';
import { PRESET_PREFIX } from '../../protocol/http/presets.ts';
import { jsonText } from '../../protocol/json-text.ts';
import { RETRY_CLASS_OF, ROUTE_PREFIX, type RetryClass } from '../../protocol/http/route-packs.ts';
import { checkCredential, type ResolvedModel } from '../../protocol/catalog.ts';
import { mergePreset } from '../../protocol/preset-merge.ts';
import type { SmartRoutingPort } from '../../protocol/ports/smart-route.ts';
import type { Decision } from '../../protocol/smart-route.ts';
import { familyWords } from '../../protocol/words.ts';

// What the gateway needs to serve `@preset/<slug>` and `@route/<slug>` names: resolution to a target (or
// an attempt list), the preset merge, and the classification that decides whether a failure moves on.

const notFound = (name: string) =>
  new ServiceError('MODEL_NOT_FOUND', `No preset or route pack \`${name.slice(0, 200)}\`.`, { param: 'model' });

function unsupported(name: string, op: GatewayOp, families: readonly string[]): ServiceError {
  const family = GATEWAY_OPS[op].family;
  return new ServiceError(
    'MODEL_ENDPOINT_NOT_SUPPORTED',
    `\`${name.slice(0, 200)}\` does not support ${familyWords(family)}.`,
    {
      param: 'model',
      details: { family, modelFamilies: families },
    },
  );
}

export const isPresetName = (name: unknown): name is string =>
  typeof name === 'string' && name.startsWith(PRESET_PREFIX);
export const isPackName = (name: unknown): name is string => typeof name === 'string' && name.startsWith(ROUTE_PREFIX);

/** Steps 1-5 for a preset: its target, the family check, the credential check, then the merged body. */
export async function resolvePreset(
  smart: SmartRoutingPort,
  op: GatewayOp,
  name: string,
  json: Record<string, unknown>,
): Promise<{ resolved: ResolvedModel; body: ArrayBuffer; merged: Record<string, unknown> }> {
  const usable = await smart.presets.usable(name.slice(PRESET_PREFIX.length));
  if (!usable) throw notFound(name);
  if (!usable.families.includes(GATEWAY_OPS[op].family)) throw unsupported(name, op, usable.families);
  checkCredential(usable.target);
  const merged = mergePreset(op, usable.preset, json);
  return {
    resolved: usable.target,
    body: new TextEncoder().encode(jsonText(merged)).buffer as ArrayBuffer,
    merged: merged as Record<string, unknown>,
  };
}

/** The attempt list for a route pack; an empty list means no route and no fallback can be called. */
export async function resolvePack(smart: SmartRoutingPort, op: GatewayOp, name: string): Promise<Decision> {
  const slug = name.slice(ROUTE_PREFIX.length);
  const usable = await smart.packs.usable(slug);
  if (!usable) throw notFound(name);
  if (!usable.families.includes(GATEWAY_OPS[op].family)) throw unsupported(name, op, usable.families);
  const decision = await smart.packs.decide(slug, GATEWAY_OPS[op].family);
  if (decision.attempts.length === 0) {
    // The pack is usable and the family is the fallback's, so only a missing credential can leave nothing.
    const providerId = decision.fallback.providerId;
    throw new ServiceError(
      'PROVIDER_CREDENTIAL_MISSING',
      `Route pack \`${slug}\` has no callable route: ${decision.fallback.reason}.`,
      {
        details: { providerId },
      },
    );
  }
  return decision;
}

/** The retry class of a failure that happened before the head, or null when it must not be retried. */
export function retryClassOf(err: unknown, retryOn: readonly RetryClass[]): RetryClass | null {
  if (!(err instanceof ServiceError)) return null;
  const cls = RETRY_CLASS_OF[err.code];
  if (cls === undefined || !retryOn.includes(cls)) return null;
  // An upstream 4xx other than 429 says the request is wrong; another route would refuse it too.
  const status = err.details.upstreamStatus;
  if (cls === 'upstream_error' && typeof status === 'number' && status < 500) return null;
  return cls;
}

/** Feeds the capacity signal from a failure before the head. */
export function observeFailure(capacity: SmartRoutingPort['capacity'], modelId: string, err: unknown): void {
  if (!(err instanceof ServiceError) || err.code !== 'UPSTREAM_RATE_LIMITED') return;
  const retryAfter = err.details.retryAfter;
  capacity.observeRateLimited(modelId, typeof retryAfter === 'number' ? retryAfter : null);
}
