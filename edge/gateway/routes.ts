import type { Logger } from 'pino';
import { ServiceError, toServiceError } from '../../protocol/errors.ts';
import { RESPONSE_ID_MAX_BYTES } from '../../protocol/ids.ts';
import { GATEWAY_OPS, type GatewayOp, type UsageEvent, type UsageRoute } from '../../protocol/gateway.ts';
import { ownBuffer, transferable } from '../../protocol/relay.ts';
import type { ResponseRouteRepo } from '../../store/response-route-repo.ts';
import type { RelayPool } from '../../workers/shared/relay-sink.ts';
import { checkCredential } from '../../protocol/catalog.ts';
import { parseJsonBody } from '../http/json-body.ts';
import { multipartBoundary } from '../http/multipart-model.ts';
import { route, type RouteContext, type RouteDef, type RouteResult } from '../http/router.ts';
import type { EdgeRequestHead } from '../http/types.ts';
import { relayMultipart } from './multipart.ts';
import { slottedBody } from './slot-affinity.ts';
import { jsonText } from '../../protocol/json-text.ts';
import { credentialFor, pooled } from './credential-for.ts';
import { keyedCalls, type JsonStart } from './keyed-call.ts';
import type { KeyPool } from './key-pool.ts';
import { outputBound, readModel, relayRequest } from './request.ts';
import { callFollower } from './follow.ts';
import { startRelay, type RelayCall } from './relay-response.ts';
import { resolveModel, type UnresolvedName } from './resolve.ts';
import {
  countPlan,
  countResult,
  estimateResult,
  isCountOp,
  messagesCountBody,
  resolveForCount,
} from './count-tokens.ts';
import type { CatalogReader } from '../../protocol/ports/catalog.ts';
import type { SmartRoutingPort } from '../../protocol/ports/smart-route.ts';
import { isPackName, isPresetName, observeFailure, resolvePack, resolvePreset, retryClassOf } from './smart-route.ts';
import type { ModelPricing } from '../../protocol/http/catalog.ts';
import { admitCall, CAPPABLE, withOutputCap, type Admission, type CallAsk, type Reservation } from './admission.ts';

// Every inference route of the interface (docs/api.md), relayed through the proxy workers. The edge parses
// just enough to resolve the model (strict JSON; the multipart `model` field) and checks the endpoint
// family before anything reaches a worker or the vault.

export interface GatewayDeps {
  catalog: CatalogReader;
  pool: RelayPool;
  responses: ResponseRouteRepo;
  /**
   * The meter: each call's usage, never prompts, answers or headers. Told before the answer's last bytes, so it
   * journals the record then (store/usage-journal.ts).
   */
  meterUsage?(event: UsageEvent): void;
  /** The rest of each call's bookkeeping (metrics, activity), after this turn's answers are written. */
  recordUsage?(event: UsageEvent): void;
  log: Logger;
  /** Directory for multipart prefixes that spill out of memory before the model field arrives. */
  spillDir: string;
  /** Presets, route packs and the signals their strategies read; without it `@` names do not resolve. */
  smart?: SmartRoutingPort;
  /** A second chance for names the catalog does not resolve (resolve.ts). */
  unresolved?: UnresolvedName;
  /** Enforced limits: each call reserves its worst case before it goes upstream (admission.ts). */
  admission?: Admission;
  /** A catalog model's USD price, for dollar limits. */
  priceOf?(modelId: string): ModelPricing | null;
  /** Chooses among a provider's keys (key-pool.ts); without it a call takes the provider's first usable key. */
  keyPool?: KeyPool;
  /** Tells the control plane that the upstream refused a key (401/403). */
  rejectCredential?(providerId: string, credentialId: string, status: number, seenUpdatedAt: number): Promise<unknown>;
}

// A large body goes to a worker in its arena slot (handed off: the worker frees it) or as `transferable`
// (edge/http/server.ts reads a large declared length into a buffer of its own), except in a route pack, which
// needs the bytes once per attempt: there each attempt gets a copy, and the slot is freed when the request
// settles. JSON routes take shared bodies; the multipart routes' JSON bodies are transferred as before.

// A route table: one entry per route, each handler short; hence its length.
export function gatewayRoutes(deps: GatewayDeps): RouteDef[] {
  const { catalog, pool, responses, log } = deps;
  const { follow, callbackFailed, hooks } = callFollower(deps);

  /** Reserves the call's worst case under the limits that apply (admitCall); null when none does. */
  const admit = (ctx: RouteContext<unknown>, ask: CallAsk): Reservation | null =>
    deps.admission === undefined ? null : admitCall(deps.admission, ctx, ask);

  const keyed =
    deps.keyPool === undefined
      ? null
      : keyedCalls({
          keyPool: deps.keyPool,
          log,
          admit,
          release: (r) => deps.admission!.release(r),
          startJson: (ctx, start) => startJson(ctx, start),
          follow,
          rejectCredential: deps.rejectCredential,
        });

  /** Starts a call under its reservation; a call that cannot start gives the reservation back. */
  function under<T>(reservation: Reservation | null, start: () => T): T {
    if (reservation === null) return start();
    try {
      return start();
    } catch (err) {
      deps.admission!.release(reservation);
      throw err;
    }
  }

  /**
   * A JSON call to a resolved model; its rate-limit headers, 429s and time to first byte feed Smart Route, and the
   * headers the headroom of the key it used (key-pool.ts).
   */
  function startJson(ctx: RouteContext<unknown>, { op, resolved, clientModel, body, key }: JsonStart): RelayCall {
    const { smart, keyPool } = deps;
    const modelId = resolved.model.id;
    const startedAt = performance.now();
    const keyId = key?.id ?? null;
    const call = startRelay(
      pool,
      relayRequest(ctx, op, resolved, clientModel, body, key),
      hooks(ctx, resolved.provider.id, (_status, headers) => {
        smart?.capacity.observeHeaders(modelId, headers);
        smart?.latency.observe(modelId, performance.now() - startedAt);
        if (keyId !== null) keyPool?.observe(keyId, headers);
      }),
    );
    if (smart) {
      call.result
        .catch((err: unknown) => observeFailure(smart.capacity, modelId, err))
        .catch((err: unknown) => callbackFailed('observeFailure', err, ctx.requestId));
    }
    return call;
  }

  /**
   * A route pack: attempts in the decision's order, moving on only for a failure class the pack names and
   * only while nothing has reached the client (`call.result` rejects only before the head). Only the
   * attempt whose answer the client gets is metered; earlier ones are logged.
   */
  async function runPack(
    ctx: RouteContext<unknown>,
    op: GatewayOp,
    smart: SmartRoutingPort,
    name: string,
    body: Buffer,
    maxOutput: number | null,
    json: Record<string, unknown> | null,
  ): Promise<RouteResult> {
    const decision = await resolvePack(smart, op, name);
    // Every attempt's price: the reservation must hold whichever route answers; settling prices the one that did.
    const pricing = () => decision.attempts.map((a) => deps.priceOf?.(a.target.model.id) ?? null);
    const reservation = admit(ctx, {
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
    for (let i = 0; ; i++) {
      const attempt = decision.attempts[i]!;
      const route: UsageRoute = {
        packSlug: decision.slug,
        routeId: attempt.routeId,
        fallback: i > 0,
        fallbackReason: reason,
      };
      const sent = cap === null ? ownBuffer(body) : withOutputCap(op, attempt.target.provider.kind, whole, cap);
      // A route's provider with several keys: the pool's choice; its failure cools or sets the key aside.
      const key = keyed !== null && pooled(attempt.target.provider) ? keyed.pickKey(ctx, attempt.target, json) : null;
      const start = { op, resolved: attempt.target, clientModel: name, body: sent };
      const call = under(reservation, () =>
        key === null ? startJson(ctx, start) : keyed!.startWith(ctx, { ...start, key }),
      );
      try {
        await call.result;
      } catch (err) {
        if (key !== null) keyed!.judge(attempt.target.provider.id, key, toServiceError(err));
        const cls = retryClassOf(err, decision.retryOn);
        if (cls !== null && !aborted && i + 1 < decision.attempts.length) {
          log.info(
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
          continue;
        }
      }
      return follow(ctx, call, {
        op,
        providerId: attempt.target.provider.id,
        modelId: attempt.target.model.id,
        route,
        reservation,
        credentialId: key?.id ?? credentialFor(attempt.target.provider)?.id ?? null,
      });
    }
  }

  function jsonOp(op: GatewayOp): RouteDef {
    const spec = GATEWAY_OPS[op];
    return route({
      method: spec.method,
      path: spec.path,
      scope: 'inference',
      rawBody: () => 'shared',
      handle(ctx) {
        const { body, headers } = ctx.req;
        const { text, name, value, maxOutput } = readModel(body, headers['content-type'], pool.arena);
        const { smart } = deps;
        if (smart && isPackName(name)) return runPack(ctx, op, smart, name, body!, maxOutput, value);
        if (smart && isPresetName(name)) {
          // A preset merges into the value, so a large body is parsed after all (with the prototype-key filter).
          const json = value ?? (parseJsonBody(body, headers['content-type']) as Record<string, unknown>);
          return resolvePreset(smart, op, name, json).then(({ resolved, body: presetBody, merged }) => {
            const bytes = body?.length ?? 0;
            // The bound the preset and the client together name (the merged body is what goes upstream).
            const bound = outputBound(merged.max_tokens, merged.max_completion_tokens, merged.max_output_tokens);
            const reservation = admit(ctx, {
              op,
              priced: resolved.model.id,
              bodyBytes: bytes,
              maxOutput: bound,
              json,
              cappable: CAPPABLE.has(op),
            });
            const cap = reservation?.outputCap ?? null;
            const sent = cap === null ? presetBody : withOutputCap(op, resolved.provider.kind, merged, cap);
            const call = under(reservation, () => startJson(ctx, { op, resolved, clientModel: name, body: sent }));
            return follow(ctx, call, {
              op,
              providerId: resolved.provider.id,
              modelId: resolved.model.id,
              reservation,
              credentialId: credentialFor(resolved.provider)?.id ?? null,
            });
          });
        }
        if (isCountOp(op)) {
          // Every model is counted: by its provider, by a local tokenizer, or by an estimate (count-tokens.ts).
          const counted = resolveForCount(catalog.current(), op, name, deps.unresolved);
          const plan = countPlan(op, counted);
          const json = () => (value ?? parseJsonBody(body, headers['content-type'])) as Record<string, unknown>;
          if (plan.via === 'estimate') {
            // Answered here, never upstream: still a call under `requests` limits, counted at once.
            const reservation = admit(ctx, { op, priced: null, bodyBytes: 0, maxOutput: null });
            if (reservation !== null) deps.admission!.settle(reservation, null);
            return estimateResult(op, json());
          }
          const sent = plan.reshaped
            ? messagesCountBody(json())
            : (text ?? pool.arena?.handOff(body!) ?? transferable(body!));
          const reservation = admit(ctx, { op, priced: null, bodyBytes: 0, maxOutput: null });
          const call = under(reservation, () =>
            startJson(ctx, { op: plan.relayOp, resolved: counted, clientModel: name as string, body: sent }),
          );
          return countResult(
            plan,
            follow(ctx, call, { op, providerId: counted.provider.id, modelId: counted.model.id, reservation }),
          );
        }
        const resolved = resolveModel(catalog.current(), op, name, { unresolved: deps.unresolved });
        // Several usable keys: the key pool chooses, and a refused key gives way to the next (keyed-call.ts).
        if (keyed !== null && pooled(resolved.provider))
          return keyed.runKeyed(ctx, op, resolved, name as string, { body: body!, json: value, maxOutput });
        const bytes = body?.length ?? 0;
        // A large body is read whole only if the loop brake asks for its last tool call (null: parse it then).
        const reservation = admit(ctx, {
          op,
          priced: resolved.model.id,
          bodyBytes: bytes,
          maxOutput,
          json: value,
          cappable: CAPPABLE.has(op),
        });
        // The hot path: `under` inline, so that no closure is made per call.
        let call: RelayCall;
        try {
          // A llama-server chat call of a session asks for the session's slot (slot-affinity.ts).
          const slotted =
            resolved.provider.kind === 'llamacpp'
              ? slottedBody(
                  op,
                  resolved,
                  catalog.current(),
                  headers,
                  () => (value ?? parseJsonBody(body, headers['content-type'])) as Record<string, unknown>,
                )
              : null;
          const sent =
            reservation?.outputCap != null
              ? withOutputCap(
                  op,
                  resolved.provider.kind,
                  slotted ?? value ?? parseJsonBody(body, headers['content-type']),
                  reservation.outputCap,
                )
              : slotted !== null
                ? jsonText(slotted)
                : (text ?? pool.arena?.handOff(body!) ?? transferable(body!));
          call = startJson(ctx, { op, resolved, clientModel: name as string, body: sent });
        } catch (err) {
          if (reservation !== null) deps.admission!.release(reservation);
          throw err;
        }
        return follow(ctx, call, {
          op,
          providerId: resolved.provider.id,
          modelId: resolved.model.id,
          reservation,
          credentialId: credentialFor(resolved.provider)?.id ?? null,
        });
      },
    });
  }

  /** Routes addressed by a response ID go to the provider that created it. */
  function byResponseId(op: GatewayOp): RouteDef {
    const spec = GATEWAY_OPS[op];
    return route({
      method: spec.method,
      path: spec.path,
      scope: 'inference',
      handle(ctx) {
        const responseId = ctx.params.id!;
        // Checked before the lookup: an unbounded path segment must not reach a store key.
        if (Buffer.byteLength(responseId) > RESPONSE_ID_MAX_BYTES) {
          throw new ServiceError('INVALID_REQUEST', `Response IDs are at most ${RESPONSE_ID_MAX_BYTES} bytes.`, {
            param: 'id',
          });
        }
        const providerId = responses.providerOf(responseId);
        const provider = providerId === undefined ? undefined : catalog.current().provider(providerId);
        if (!provider) {
          throw new ServiceError(
            'NOT_FOUND',
            `No response \`${responseId.slice(0, 100)}\` was created through this service.`,
            { param: 'id' },
          );
        }
        if (!provider.enabled) throw new ServiceError('PROVIDER_DISABLED', `Provider \`${provider.id}\` is disabled.`);
        checkCredential({ provider });
        const reservation = admit(ctx, { op, priced: null, bodyBytes: 0, maxOutput: null });
        const call = under(reservation, () =>
          startRelay(pool, relayRequest(ctx, op, { provider, model: null }, null, null), hooks(ctx, provider.id)),
        );
        return follow(ctx, call, {
          op,
          providerId: provider.id,
          modelId: null,
          reservation,
          credentialId: credentialFor(provider)?.id ?? null,
        });
      },
    });
  }

  function multipartOp(op: GatewayOp): RouteDef {
    const spec = GATEWAY_OPS[op];
    const acceptsJson = spec.body === 'multipart-or-json';
    const isMultipart = (head: EdgeRequestHead) => multipartBoundary(head.headers['content-type']) !== null;
    return route({
      method: spec.method,
      path: spec.path,
      scope: 'inference',
      rawBody: (head) => (isMultipart(head) || !acceptsJson ? 'stream' : 'buffer'),
      async handle(ctx) {
        if (!isMultipart(ctx.req)) {
          if (!acceptsJson) throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', `${spec.path} takes multipart/form-data.`);
          const { name } = readModel(ctx.req.body, ctx.req.headers['content-type']);
          const resolved = resolveModel(catalog.current(), op, name, { multipart: true, unresolved: deps.unresolved });
          const reservation = admit(ctx, {
            op,
            priced: resolved.model.id,
            bodyBytes: ctx.req.body?.length ?? 0,
            maxOutput: null,
          });
          const call = under(reservation, () =>
            startRelay(
              pool,
              relayRequest(ctx, op, resolved, name as string, transferable(ctx.req.body!)),
              hooks(ctx, resolved.provider.id),
            ),
          );
          return follow(ctx, call, {
            op,
            providerId: resolved.provider.id,
            modelId: resolved.model.id,
            reservation,
            credentialId: credentialFor(resolved.provider)?.id ?? null,
          });
        }
        let reservation: Reservation | null = null;
        return relayMultipart(ctx, {
          spillDir: deps.spillDir,
          resolve: (name) =>
            resolveModel(catalog.current(), op, name, { multipart: true, unresolved: deps.unresolved }),
          start: (resolved, clientModel) => {
            // The file's size is not known before it has streamed: the reservation holds the output bound only.
            reservation = admit(ctx, { op, priced: resolved.model.id, bodyBytes: 0, maxOutput: null });
            return under(reservation, () =>
              startRelay(pool, relayRequest(ctx, op, resolved, clientModel, null), hooks(ctx, resolved.provider.id)),
            );
          },
          follow: (resolved, call) =>
            follow(ctx, call, {
              op,
              providerId: resolved.provider.id,
              modelId: resolved.model.id,
              reservation,
              credentialId: credentialFor(resolved.provider)?.id ?? null,
            }),
        });
      },
    });
  }

  return (Object.keys(GATEWAY_OPS) as GatewayOp[]).map((op) => {
    const body = GATEWAY_OPS[op].body;
    if (body === 'none') return byResponseId(op);
    if (body === 'json') return jsonOp(op);
    return multipartOp(op);
  });
}
