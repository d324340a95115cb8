import { ServiceError } from '../../protocol/errors.ts';
import { RESPONSE_ID_MAX_BYTES } from '../../protocol/ids.ts';
import { GATEWAY_OPS, type GatewayOp } from '../../protocol/gateway.ts';
import { transferable } from '../../protocol/relay.ts';
import { checkCredential } from '../../protocol/catalog.ts';
import { multipartBoundary } from '../http/multipart-model.ts';
import { route, type RouteDef } from '../http/router.ts';
import type { EdgeRequestHead } from '../http/types.ts';
import { createCallKit, type CallKit } from './call-kit.ts';
import type { GatewayDeps } from './deps.ts';
import { jsonOp } from './json-op.ts';
import { relayMultipart } from './multipart.ts';
import { credentialFor } from './credential-for.ts';
import { readModel, relayRequest } from './request.ts';
import { startRelay } from './relay-response.ts';
import { resolveModel } from './resolve.ts';
import type { Reservation } from './admission.ts';

// Every inference route of the interface (docs/api.md), relayed through the proxy workers. The edge parses
// just enough to resolve the model (strict JSON; the multipart `model` field) and checks the endpoint
// family before anything reaches a worker or the vault.

export type { GatewayDeps } from './deps.ts';

// A large body goes to a worker in its arena slot (handed off: the worker frees it) or as `transferable`
// (edge/http/server.ts reads a large declared length into a buffer of its own), except in a route pack, which
// needs the bytes once per attempt: there each attempt gets a copy, and the slot is freed when the request
// settles. JSON routes take shared bodies (json-op.ts); the multipart routes' JSON bodies are transferred.

export function gatewayRoutes(deps: GatewayDeps): RouteDef[] {
  const kit = createCallKit(deps);
  return (Object.keys(GATEWAY_OPS) as GatewayOp[]).map((op) => {
    const body = GATEWAY_OPS[op].body;
    if (body === 'none') return byResponseId(kit, deps, op);
    if (body === 'json') return jsonOp(kit, deps, op);
    return multipartOp(kit, deps, op);
  });
}

/** Routes addressed by a response ID go to the provider that created it. */
function byResponseId(kit: CallKit, deps: GatewayDeps, op: GatewayOp): RouteDef {
  const { catalog, pool, responses } = deps;
  const spec = GATEWAY_OPS[op];
  return route({
    method: spec.method,
    path: spec.path,
    scope: 'inference',
    async handle(ctx) {
      const responseId = ctx.params.id!;
      // Checked before the lookup: an unbounded path segment must not reach a store key.
      if (Buffer.byteLength(responseId) > RESPONSE_ID_MAX_BYTES) {
        throw new ServiceError('INVALID_REQUEST', `Response IDs are at most ${RESPONSE_ID_MAX_BYTES} bytes.`, {
          param: 'id',
        });
      }
      const providerId = await responses.find(responseId);
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
      return kit.run(
        ctx,
        { op, priced: null, bodyBytes: 0, maxOutput: null },
        () =>
          startRelay(pool, relayRequest(ctx, op, { provider, model: null }, null, null), kit.hooks(ctx, provider.id)),
        { providerId: provider.id, modelId: null, credentialId: credentialFor(provider)?.id ?? null },
      );
    },
  });
}

function multipartOp(kit: CallKit, deps: GatewayDeps, op: GatewayOp): RouteDef {
  const { catalog, pool } = deps;
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
        kit.capture(ctx, typeof name === 'string' ? name : null);
        const resolved = resolveModel(catalog.current(), op, name, { multipart: true, unresolved: deps.unresolved });
        const ask = { op, priced: resolved.model.id, bodyBytes: ctx.req.body?.length ?? 0, maxOutput: null };
        const start = () =>
          startRelay(
            pool,
            relayRequest(ctx, op, resolved, name as string, transferable(ctx.req.body!)),
            kit.hooks(ctx, resolved.provider.id),
          );
        return kit.run(ctx, ask, start, {
          providerId: resolved.provider.id,
          modelId: resolved.model.id,
          credentialId: credentialFor(resolved.provider)?.id ?? null,
        });
      }
      let reservation: Reservation | null = null;
      return relayMultipart(ctx, {
        spillDir: deps.spillDir,
        resolve: (name) => resolveModel(catalog.current(), op, name, { multipart: true, unresolved: deps.unresolved }),
        start: (resolved, clientModel) => {
          // The file's size is not known before it has streamed: the reservation holds the output bound only.
          reservation = kit.admit(ctx, { op, priced: resolved.model.id, bodyBytes: 0, maxOutput: null });
          kit.capture(ctx, clientModel);
          return kit.under(reservation, () =>
            startRelay(pool, relayRequest(ctx, op, resolved, clientModel, null), kit.hooks(ctx, resolved.provider.id)),
          );
        },
        follow: (resolved, call) =>
          kit.follow(ctx, call, {
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
