import { actorOf } from '../../protocol/actor.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { UPSTREAM_MODEL_ID_MAX } from '../../protocol/http/catalog.ts';
import { PROVIDER_ID_MAX } from '../../protocol/http/providers.ts';
import { checkResidencyPatch } from '../../protocol/http/residency.ts';
import { readQuery } from '../../protocol/query.ts';
import type { ResidencyPort } from '../../protocol/ports/runtime.ts';
import { route, type RouteDef } from '../http/router.ts';

// The local-model scheduler's view and a model's pin and keep-alive (docs/api.md, Local-model scheduler).
// Reading is `read`; pinning changes what stays in memory for every agent, so it is `manage`, as loading is.

/** A catalog model ID is a provider ID, `/` and an upstream model ID; a longer path segment names none. */
const MODEL_ID_MAX = PROVIDER_ID_MAX + 1 + UPSTREAM_MODEL_ID_MAX;

function modelIdOf(raw: string): string {
  if (raw.length > MODEL_ID_MAX)
    throw new ServiceError('INVALID_REQUEST', `Model IDs are at most ${MODEL_ID_MAX} characters.`, { param: 'id' });
  return raw;
}

export function residencyRoutes(residency: ResidencyPort): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/runtime/residency',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        return { body: await residency.list() };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/runtime/residency/:id',
      scope: 'read',
      handle: async ({ req, params }) => {
        readQuery(req.query, []);
        return { body: await residency.get(modelIdOf(params.id!)) };
      },
    }),
    route({
      method: 'PATCH',
      path: '/v1/runtime/residency/:id',
      scope: 'manage',
      body: checkResidencyPatch,
      handle: async ({ req, params, body, principal, requestId }) => {
        readQuery(req.query, []);
        return { body: await residency.patch(modelIdOf(params.id!), body, actorOf(principal), requestId) };
      },
    }),
  ];
}
