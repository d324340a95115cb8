import type { Logger } from 'pino';
import type { CredentialRecord, ResolvedModel } from '../../protocol/catalog.ts';
import { ServiceError, toServiceError } from '../../protocol/errors.ts';
import type { GatewayOp } from '../../protocol/gateway.ts';
import type { ProviderKind } from '../../protocol/providers.ts';
import { ownBuffer, type RelayRequest } from '../../protocol/relay.ts';
import { parseJsonBody } from '../http/json-body.ts';
import type { RouteContext, RouteResult } from '../http/router.ts';
import { CAPPABLE, withOutputCap, type CallAsk, type Reservation } from './admission.ts';
import { affinitySession } from './affinity-session.ts';
import type { Followed } from './follow.ts';
import type { KeyPool } from './key-pool.ts';
import type { RelayCall } from './relay-response.ts';

// A call to a provider that holds several usable keys (docs/api.md, Key pools): the key pool chooses the key
// (session affinity, headroom); a 429 or 529 cools that key down, a 401 or 403 sets it aside, and while nothing
// has reached the client the call moves to the next key, each key at most once, MAX_KEY_ATTEMPTS at most. A key
// whose own limit (`credential` scope) has no room is passed over the same way. Earlier attempts are logged; the
// attempt whose answer the client gets is metered.

/** Attempts of one call at most, whatever the number of keys. */
export const MAX_KEY_ATTEMPTS = 4;

export interface KeyedDeps {
  keyPool: KeyPool;
  log: Logger;
  admit(ctx: RouteContext<unknown>, ask: CallAsk): Reservation | null;
  release(reservation: Reservation): void;
  startJson(ctx: RouteContext<unknown>, start: JsonStart): RelayCall;
  follow(ctx: RouteContext<unknown>, call: RelayCall, followed: Followed): Promise<RouteResult>;
  /** Tells the control plane that the upstream refused a key (it sets the key aside and says so). */
  rejectCredential?(providerId: string, credentialId: string, status: number, seenUpdatedAt: number): Promise<unknown>;
}

export interface JsonStart {
  op: GatewayOp;
  resolved: ResolvedModel;
  clientModel: string;
  body: NonNullable<RelayRequest['body']>;
  /** The key the pool chose; absent: the provider's one usable key. */
  key?: CredentialRecord | null;
}

/** What a failure before the head says of the key: cool it down, set it aside, or nothing. */
function verdictOf(err: ServiceError): 'cool' | 'reject' | null {
  if (err.code === 'UPSTREAM_RATE_LIMITED') return 'cool';
  if (err.code === 'UPSTREAM_ERROR' && err.details.upstreamStatus === 529) return 'cool';
  if (err.code === 'UPSTREAM_AUTH_FAILED') return 'reject';
  return null;
}

/** The session a call names for affinity (its headers, else its body's members). */
const sessionOf = (ctx: RouteContext<unknown>, json: Record<string, unknown> | null) =>
  affinitySession(ctx.req.headers, (name) => json?.[name]);

export function keyedCalls(deps: KeyedDeps) {
  const { keyPool, log } = deps;

  /** What the key's failure does: its cooldown or its setting aside. Never throws. */
  function judge(providerId: string, key: CredentialRecord, err: ServiceError): 'cool' | 'reject' | null {
    const verdict = verdictOf(err);
    if (verdict === 'cool') keyPool.rateLimited(key.id, err.headers);
    if (verdict === 'reject') {
      keyPool.rejected(key.id);
      const status = typeof err.details.upstreamStatus === 'number' ? err.details.upstreamStatus : 401;
      deps
        .rejectCredential?.(providerId, key.id, status, key.updatedAt)
        .catch((e: unknown) =>
          log.warn({ providerId, credentialId: key.id, err: String(e).slice(0, 200) }, 'could not set a key aside'),
        );
    }
    return verdict;
  }

  /** A call of a key: counted in flight while it runs. */
  function startWith(ctx: RouteContext<unknown>, start: JsonStart & { key: CredentialRecord }): RelayCall {
    keyPool.began(start.key.id);
    let call: RelayCall;
    try {
      call = deps.startJson(ctx, start);
    } catch (err) {
      keyPool.ended(start.key.id);
      throw err;
    }
    void call.done.then(() => keyPool.ended(start.key.id));
    return call;
  }

  async function runKeyed(
    ctx: RouteContext<unknown>,
    op: GatewayOp,
    resolved: ResolvedModel,
    clientModel: string,
    request: { body: Buffer; json: Record<string, unknown> | null; maxOutput: number | null },
  ): Promise<RouteResult> {
    const { provider, model } = resolved;
    const session = sessionOf(ctx, request.json);
    const tried = new Set<string>();
    let aborted = false;
    ctx.onAbort(() => (aborted = true));
    let refused: unknown = null;
    for (let attempt = 0; attempt < MAX_KEY_ATTEMPTS; attempt++) {
      const key = keyPool.choose(provider.id, provider.credentials, session, tried);
      if (key === null) break;
      tried.add(key.id);
      let reservation: Reservation | null;
      try {
        reservation = deps.admit(ctx, {
          op,
          priced: model.id,
          bodyBytes: request.body.length,
          maxOutput: request.maxOutput,
          json: request.json,
          cappable: CAPPABLE.has(op),
          credentialId: key.id,
        });
      } catch (err) {
        // This key's own limit has no room: another key may have.
        if (err instanceof ServiceError && err.code === 'LIMIT_EXCEEDED' && err.details.scope === 'credential') {
          refused = err;
          continue;
        }
        throw err;
      }
      const body = keyedBody(ctx, op, provider.kind, request, reservation?.outputCap ?? null);
      let call: RelayCall;
      const startedAt = Date.now();
      try {
        call = startWith(ctx, { op, resolved, clientModel, body, key });
      } catch (err) {
        if (reservation !== null) deps.release(reservation);
        throw err;
      }
      try {
        await call.result;
      } catch (err) {
        const failure = toServiceError(err);
        if (judge(provider.id, key, failure) !== null && !aborted && attempt + 1 < MAX_KEY_ATTEMPTS) {
          if (keyPool.choose(provider.id, provider.credentials, null, tried) !== null) {
            if (reservation !== null) deps.release(reservation);
            log.info(
              { reqId: ctx.requestId, providerId: provider.id, credentialId: key.id, reason: failure.code },
              'key attempt failed; trying the next',
            );
            continue;
          }
        }
      }
      return deps.follow(ctx, call, {
        op,
        providerId: provider.id,
        modelId: model.id,
        reservation,
        credentialId: key.id,
        startedAt,
      });
    }
    if (refused !== null) throw refused;
    throw noKeyLeft(keyPool, provider);
  }

  /** A pack route's key, chosen by the pool (the pack's own retries move between routes). */
  const pickKey = (ctx: RouteContext<unknown>, resolved: ResolvedModel, json: Record<string, unknown> | null) =>
    keyPool.choose(resolved.provider.id, resolved.provider.credentials, sessionOf(ctx, json));

  return { runKeyed, pickKey, startWith, judge };
}

/** No key to try: as the record check says it (checkCredential), with the pool's own refusals counted. */
function noKeyLeft(keyPool: KeyPool, provider: ResolvedModel['provider']): ServiceError {
  let rejected = 0;
  let disabled = 0;
  for (const c of provider.credentials) {
    if (!c.enabled) disabled++;
    else if (keyPool.refused(c)) rejected++;
  }
  const { id, credentials } = provider;
  return new ServiceError(
    'PROVIDER_CREDENTIAL_MISSING',
    `Provider \`${id}\` has no usable credential (${rejected} refused by the provider, ${disabled} disabled); ` +
      `add, enable or edit one at /v1/providers/${id}/credentials.`,
    { details: { providerId: id, credentials: credentials.length, rejected, disabled } },
  );
}

/** What one key's attempt sends: the client's bytes (a copy: each attempt needs them), or the body with the cap. */
function keyedBody(
  ctx: RouteContext<unknown>,
  op: GatewayOp,
  kind: ProviderKind,
  request: { body: Buffer; json: Record<string, unknown> | null },
  cap: number | null,
) {
  if (cap === null) return ownBuffer(request.body);
  return withOutputCap(op, kind, request.json ?? parseJsonBody(request.body, ctx.req.headers['content-type']), cap);
}
