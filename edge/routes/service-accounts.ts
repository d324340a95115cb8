import { checkServiceAccountCreate, checkServiceAccountUpdate } from '../../protocol/http/service-accounts.ts';
import { readQuery } from '../../protocol/query.ts';
import { actorOf } from '../../protocol/actor.ts';
import type { ServiceAccountsPort } from '../../protocol/ports/service-accounts.ts';
import { route, type RouteDef } from '../http/router.ts';

// Service accounts own tokens: reading them is a management GET (`read`), changing them needs `admin`, as
// changing tokens does.

export function serviceAccountRoutes(accounts: ServiceAccountsPort): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/service-accounts',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        return { body: { data: await accounts.list() } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/service-accounts',
      scope: 'admin',
      body: checkServiceAccountCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        body: await accounts.create(body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/service-accounts/:id',
      scope: 'read',
      handle: async ({ params }) => ({ body: await accounts.get(params.id!) }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/service-accounts/:id',
      scope: 'admin',
      body: checkServiceAccountUpdate,
      handle: async ({ body, params, principal, requestId }) => ({
        body: await accounts.update(params.id!, body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/service-accounts/:id',
      scope: 'admin',
      handle: async ({ params, principal, requestId }) => {
        const account = await accounts.remove(params.id!, actorOf(principal), requestId);
        return { body: { id: account.id, deleted: true } };
      },
    }),
  ];
}
