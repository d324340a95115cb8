import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createGaugeBudgets } from '../../../control/gauge/budgets.ts';
import { auditRepo } from '../../../store/audit-repo.ts';
import { openStoreEnv } from '../../../store/env.ts';
import { gaugeBudgetRepo } from '../../../store/gauge-budget-repo.ts';
import { answered, assertNotFound, auditedActions, race } from '../../helpers/races.ts';
import { removeDirs, tempDataDir } from '../../helpers/usage.ts';

// A budget change racing the budget's removal (W4.6 item 1) must not bring it back.

const dirs: string[] = [];
after(() => removeDirs(dirs));
const actor = { actorType: 'system', actorId: 'test' } as const;

function started(dir = tempDataDir(dirs)) {
  const env = openStoreEnv(dir);
  const budgets = createGaugeBudgets({
    env,
    repo: gaugeBudgetRepo(env),
    audit: auditRepo(env),
    usage: { breakdown: () => ({ data: [], hasMore: false }) },
    readings: () => [],
    gaugeEnabled: () => false,
    providerExists: () => true,
    sources: { get: () => undefined },
  });
  return { dir, env, budgets };
}

async function withBudget() {
  const world = started();
  const { id } = await world.budgets.create(
    { name: 'team', amount: 10, period: 'month', basis: 'estimated' },
    actor,
    'req_0',
  );
  return { world, id };
}

/** No status, none stored, none after the store is reopened. */
async function assertRemoved(world: ReturnType<typeof started>, id: string) {
  assert.deepEqual(world.budgets.budgetStatuses(), []);
  assert.equal(gaugeBudgetRepo(world.env).get(id), undefined);
  await world.env.close();
  const again = started(world.dir);
  try {
    assert.deepEqual(again.budgets.budgetStatuses(), []);
  } finally {
    await again.env.close();
  }
}

test('a change racing the removal of its budget answers NOT_FOUND and writes nothing (W4.6)', async () => {
  const { world, id } = await withBudget();
  const [removed, changed] = await race(
    () => world.budgets.remove(id, actor, 'req_1'),
    () => world.budgets.update(id, { amount: 20 }, actor, 'req_2'),
  );
  answered(removed);
  assertNotFound(changed, /^No Gauge budget with ID `bud_/);
  assert.deepEqual(auditedActions(world.env, id), ['gauge-budget.create', 'gauge-budget.delete']);
  await assertRemoved(world, id);
});

test('a removal racing an earlier change of its budget still removes it (W4.6)', async () => {
  const { world, id } = await withBudget();
  const [changed, removed] = await race(
    () => world.budgets.update(id, { amount: 20 }, actor, 'req_1'),
    () => world.budgets.remove(id, actor, 'req_2'),
  );
  assert.equal(answered(changed).amount, 20);
  answered(removed);
  await assertRemoved(world, id);
});
