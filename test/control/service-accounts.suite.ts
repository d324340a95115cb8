import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createServiceAccounts } from '../../control/service-accounts.ts';
import { auditRepo } from '../../store/audit-repo.ts';
import { openStoreEnv } from '../../store/env.ts';
import { serviceAccountRepo } from '../../store/service-account-repo.ts';
import { answered, assertNotFound, auditedActions, race } from '../helpers/races.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

// A service account change racing the account's removal (W4.6 item 1) must not bring it back.

const dirs: string[] = [];
after(() => removeDirs(dirs));
const actor = { actorType: 'system', actorId: 'test' } as const;

function started(dir = tempDataDir(dirs)) {
  const env = openStoreEnv(dir);
  const accounts = createServiceAccounts({
    env,
    repo: serviceAccountRepo(env),
    audit: auditRepo(env),
    tokenCounts: () => new Map(),
  });
  return { dir, env, accounts };
}

/** Not listed, not known, not stored, and none of it after the store is reopened. */
async function assertRemoved(world: ReturnType<typeof started>, id: string) {
  assert.deepEqual(world.accounts.list(), []);
  assert.equal(world.accounts.exists(id), false);
  assert.equal(serviceAccountRepo(world.env).get(id), undefined);
  await world.env.close();
  const again = started(world.dir);
  try {
    assert.deepEqual(again.accounts.list(), []);
    assert.equal(again.accounts.exists(id), false);
  } finally {
    await again.env.close();
  }
}

test('a change racing the removal of its service account answers NOT_FOUND and writes nothing (W4.6)', async () => {
  const world = started();
  const { id } = await world.accounts.create({ name: 'ci' }, actor, 'req_0');
  const [removed, changed] = await race(
    () => world.accounts.remove(id, actor, 'req_1'),
    () => world.accounts.update(id, { name: 'x' }, actor, 'req_2'),
  );
  answered(removed);
  assertNotFound(changed, /^No service account with ID `sa_/);
  assert.deepEqual(auditedActions(world.env, id), ['service-account.create', 'service-account.delete']);
  await assertRemoved(world, id);
});

test('a removal racing an earlier change of its service account still removes it (W4.6)', async () => {
  const world = started();
  const { id } = await world.accounts.create({ name: 'ci' }, actor, 'req_0');
  const [changed, removed] = await race(
    () => world.accounts.update(id, { description: 'nightly' }, actor, 'req_1'),
    () => world.accounts.remove(id, actor, 'req_2'),
  );
  assert.equal(answered(changed).description, 'nightly');
  answered(removed);
  await assertRemoved(world, id);
});
