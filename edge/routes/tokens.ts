import { checkTokenCreate, checkTokenUpdate } from '../../protocol/http/tokens.ts';
import { actorOf } from '../../protocol/actor.ts';
import { route, type RouteDef } from '../http/router.ts';
import type { TokensPort } from '../../protocol/ports/tokens.ts';

export function tokenRoutes(tokens: TokensPort): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/tokens',
      scope: 'admin',
      handle: async () => ({ body: { data: await tokens.list() } }),
    }),
    route({
      method: 'POST',
      path: '/v1/tokens',
      scope: 'admin',
      body: checkTokenCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        // The only response that ever holds a secret: shown once, at creation.
        body: await tokens.create(body, actorOf(principal), requestId),
        headers: { 'cache-control': 'no-store' },
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/tokens/:id',
      scope: 'admin',
      handle: async ({ params }) => ({ body: await tokens.get(params.id!) }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/tokens/:id',
      scope: 'admin',
      body: checkTokenUpdate,
      handle: async ({ body, params, principal, requestId }) => ({
        body: await tokens.update(params.id!, body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/tokens/:id',
      scope: 'admin',
      handle: async ({ params, principal, requestId }) => {
        const token = await tokens.revoke(params.id!, actorOf(principal), requestId);
        return { body: { id: token.id, deleted: true } };
      },
    }),
  ];
}
