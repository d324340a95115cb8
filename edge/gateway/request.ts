import type { ScannableMemory } from '../../protocol/control-bytes.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { GATEWAY_OPS, type GatewayOp } from '../../protocol/gateway.ts';
import { KINDS, PROVIDER_KINDS, type ProviderKind } from '../../protocol/providers.ts';
import type { RelayRequest } from '../../protocol/relay.ts';
import type { TranslationKey } from '../../protocol/translation.ts';
import { forwardRequestHeaders } from '../../workers/proxy/header-policy.ts';
import { targetOf, type CredentialRecord, type ResolvedModel } from '../../protocol/catalog.ts';
import { readJsonBody, scanJsonBody } from '../http/json-body.ts';
import { affinitySession } from './affinity-session.ts';
import { credentialFor } from './credential-for.ts';
import type { RouteContext } from '../http/router.ts';

// What the gateway reads of a request before it relays it: the JSON body's model and output bounds, and the
// request a relay worker gets.

const HINTS = new Map<ProviderKind, ReadonlyMap<string, string>>(
  PROVIDER_KINDS.map((k) => [k, new Map((KINDS[k].hints as readonly string[]).map((h) => [h.toLowerCase(), h]))]),
);

export function relayRequest(
  ctx: RouteContext<unknown>,
  op: GatewayOp,
  resolved: Pick<ResolvedModel, 'provider'> & {
    model: { id: string; upstreamModelId: string } | null;
    translation?: TranslationKey;
  },
  clientModel: string | null,
  body: RelayRequest['body'],
  /** The key the key pool chose; absent: the provider's one usable key. */
  key?: CredentialRecord | null,
): RelayRequest {
  const { provider } = resolved;
  const credential = key === undefined ? credentialFor(provider) : key;
  const req: RelayRequest = {
    op,
    target: targetOf(provider),
    credentialRef: credential?.ref ?? null,
    credentialId: credential?.id ?? null,
    requestId: ctx.requestId,
    clientModel,
    upstreamModelId: resolved.model?.upstreamModelId ?? null,
    params: { ...ctx.params },
    query: ctx.req.query,
    headers: forwardRequestHeaders(ctx.req.headers, HINTS.get(provider.kind)!),
    body,
    bodyStreamed: body === null && GATEWAY_OPS[op].body !== 'none',
  };
  // Only translated calls carry the member, so the common request keeps one shape.
  if (resolved.translation !== undefined) req.translation = resolved.translation;
  // The scheduler keeps a local model warm for its sessions (docs/api.md, Local-model scheduler).
  if (provider.kind === 'embedded') req.session = affinitySession(ctx.req.headers, textMember(body));
  return req;
}

/** A member of a body sent as text, parsed on the first ask; a larger body (bytes) names its session in headers. */
function textMember(body: RelayRequest['body']): (name: string) => unknown {
  let parsed: Record<string, unknown> | null | undefined;
  return (name) => {
    if (parsed === undefined) {
      try {
        const value: unknown = typeof body === 'string' ? JSON.parse(body) : null;
        parsed =
          typeof value === 'object' && value !== null && !Array.isArray(value)
            ? (value as Record<string, unknown>)
            : null;
      } catch {
        parsed = null;
      }
    }
    return parsed?.[name];
  };
}

// Bodies up to this many bytes travel to a worker as text: cloning a short string is cheaper than
// allocating, transferring and detaching a buffer. Larger ones go in a slot of the body arena, or
// transferred as bytes when none is free (see `jsonOp`).
const TEXT_BODY_MAX = 64 * 1024;

/**
 * The body's top-level `model`, after strict JSON checks, and the body's text when it is small enough to
 * travel as text. A large body is validated by a scan that builds nothing (json-scan.ts): the edge reads
 * one member of it, and a worker sends its bytes upstream.
 */
export function readModel(
  body: Buffer | null,
  contentType: string | undefined,
  memory?: ScannableMemory,
): { text: string | null; name: unknown; value: Record<string, unknown> | null; maxOutput: number | null } {
  if (body !== null && body.length > TEXT_BODY_MAX) {
    const scan = scanJsonBody(body, contentType, MODEL, memory);
    if (scan.type !== 'object') throw notAnObject();
    const maxOutput = outputBound(scan.member(MODEL[1]!), scan.member(MODEL[2]!), scan.member(MODEL[3]!));
    return { text: null, name: scan.member('model'), value: null, maxOutput };
  }
  const { text, value } = readJsonBody(body, contentType);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw notAnObject();
  const v = value as Record<string, unknown>;
  return { text, name: v.model, value: v, maxOutput: outputBound(v[MODEL[1]!], v[MODEL[2]!], v[MODEL[3]!]) };
}

/** The members the edge reads of a JSON body: the model, and the output bounds admission reserves by. */
const MODEL = ['model', 'max_tokens', 'max_completion_tokens', 'max_output_tokens'];
/** The first output bound a body names as a positive integer; null when none (admission then reserves its default). */
export function outputBound(...values: unknown[]): number | null {
  for (const v of values) if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return v;
  return null;
}
const notAnObject = () => new ServiceError('INVALID_REQUEST', 'The request body must be a JSON object.');
