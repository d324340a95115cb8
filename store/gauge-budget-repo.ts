import type { GaugeBudget } from '../protocol/gauge-money.ts';
import type { StoreEnv } from './env.ts';
import { recordRepo } from './record-repo.ts';

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
  return recordRepo<GaugeBudget>(env, 'gauge-budgets', (b) => b.id);
}
