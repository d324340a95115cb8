import { FAMILIES } from '../../protocol/families.ts';
import { checkModelCreate, checkModelUpdate } from '../../protocol/http/catalog.ts';
import { readQuery } from '../../protocol/query.ts';
import { actorOf } from '../../protocol/actor.ts';
import { parseJsonBody } from '../http/json-body.ts';
import { route, type RouteDef } from '../http/router.ts';
import type { CatalogCalls, ModelActionRunner } from '../../protocol/ports/catalog.ts';

// `{id}` is the URL-encoded direct ID (`openai%2Fgpt-x`): upstream IDs hold slashes of their own.
export function catalogRoutes(catalog: CatalogCalls, runAction?: ModelActionRunner): RouteDef[] {
  return [
    ...(runAction
      ? [
          route({
            method: 'POST',
            path: '/v1/catalog/models/:id/actions/:action',
            scope: 'manage',
            // Only `benchmark` reads its (optional) body; the other actions take none and ignore one sent.
            rawBody: () => 'buffer',
            handle: async ({ req, params, principal, requestId }) => {
              const wait = readQuery(req.query, ['wait']).oneOf('wait', ['true', 'false'] as const) === 'true';
              const reads = params.action === 'benchmark' && req.body !== null && req.body.length > 0;
              const body = reads ? parseJsonBody(req.body, req.headers['content-type']) : undefined;
              return runAction(params.id!, params.action!, actorOf(principal), requestId, wait, body);
            },
          }),
        ]
      : []),
    route({
      method: 'GET',
      path: '/v1/catalog/models',
      scope: 'read',
      handle: async ({ req }) => {
        const q = readQuery(req.query, ['providerId', 'source', 'family', 'hidden']);
        const hidden = q.oneOf('hidden', ['true', 'false'] as const);
        const filter = {
          providerId: q.string('providerId', 63),
          source: q.oneOf('source', ['explicit', 'auto'] as const),
          family: q.oneOf('family', FAMILIES),
          hidden: hidden === undefined ? undefined : hidden === 'true',
        };
        return { body: { data: await catalog.list(filter) } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/catalog/models',
      scope: 'manage',
      body: checkModelCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        body: await catalog.create(body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/catalog/models/:id',
      scope: 'read',
      handle: async ({ params }) => ({ body: await catalog.get(params.id!) }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/catalog/models/:id',
      scope: 'manage',
      body: checkModelUpdate,
      handle: async ({ body, params, principal, requestId }) => ({
        body: await catalog.update(params.id!, body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/catalog/models/:id',
      scope: 'manage',
      handle: async ({ params, principal, requestId }) => {
        await catalog.remove(params.id!, actorOf(principal), requestId);
        return { body: { id: params.id, deleted: true } };
      },
    }),
  ];
}
