import type { GaugeBudget } from '../protocol/gauge-money.ts';
import type { StoreEnv } from './env.ts';

// Gauge's project budgets. The edge is the only writer. Keys are budget IDs (`bud_` + a ULID), made here, never
// taken from a client: a path ID is only looked up, after its length is checked. ULIDs sort by creation, so
// key order is the stable display order.

export interface GaugeBudgetRepo {
  all(): GaugeBudget[];
  get(id: string): GaugeBudget | undefined;
  count(): number;
  stagePut(budget: GaugeBudget): void;
  stageRemove(id: string): void;
}

export function gaugeBudgetRepo(env: StoreEnv): GaugeBudgetRepo {
  const db = env.db<GaugeBudget>('gauge-budgets');
  return {
    all: () => [...db.getRange().map(({ value }) => value)],
    get: (id) => db.get(id),
    count: () => db.getCount(),
    stagePut: (budget) => void db.put(budget.id, budget),
    stageRemove: (id) => void db.remove(id),
  };
}
