import { checkGaugeBudgetCreate, checkGaugeBudgetUpdate } from '../../protocol/http/gauge-budgets.ts';
import { readQuery } from '../../protocol/query.ts';
import { actorOf } from '../../protocol/actor.ts';
import type { GaugeBudgetsPort } from '../../protocol/ports/gauge.ts';
import { route, type RouteDef } from '../http/router.ts';

// Gauge's project budgets (docs/api.md, Gauge). Budgets are setup: they read and write while Gauge is
// off, like accounts and sources, and their spend comes from the meter, which runs either way.

export function gaugeBudgetRoutes(budgets: GaugeBudgetsPort): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/gauge/budgets',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        return { body: { data: await budgets.budgetStatuses() } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/gauge/budgets',
      scope: 'manage',
      body: checkGaugeBudgetCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        body: await budgets.create(body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/gauge/budgets/:id',
      scope: 'manage',
      body: checkGaugeBudgetUpdate,
      handle: async ({ body, params, principal, requestId }) => ({
        body: await budgets.update(params.id!, body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/gauge/budgets/:id',
      scope: 'manage',
      handle: async ({ params, principal, requestId }) => {
        await budgets.remove(params.id!, actorOf(principal), requestId);
        return { body: { id: params.id, deleted: true } };
      },
    }),
  ];
}
