import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createGaugeService } from '../../../control/gauge/service.ts';
import { auditRepo } from '../../../store/audit-repo.ts';
import { openStoreEnv, type StoreEnv } from '../../../store/env.ts';
import { gaugeDataRepo } from '../../../store/gauge-data-repo.ts';
import { gaugeSourceRepo } from '../../../store/gauge-source-repo.ts';
import { answered, assertNotFound, auditedActions, race } from '../../helpers/races.ts';
import { removeDirs, tempDataDir } from '../../helpers/usage.ts';

// A Gauge account change racing the account's removal (as W4.6 item 1 found for the gateway's records): the
// account must not come back, and the vault must not keep a credential for it.

const dirs: string[] = [];
after(() => removeDirs(dirs));
const actor = { actorType: 'system', actorId: 'test' } as const;

function started(dir = tempDataDir(dirs), secrets = new Map<string, string>()) {
  const opened = openStoreEnv(dir);
  let pending: (() => void) | null = null;
  // Runs once, right after the next commit is queued: a write made there queues its own commit behind it.
  const env: StoreEnv = {
    ...opened,
    commit(writes) {
      const committed = opened.commit(writes);
      const run = pending;
      pending = null;
      run?.();
      return committed;
    },
  };
  let n = 0;
  const vault = {
    put: async (secret: string) => {
      const ref = `cred_${++n}`;
      secrets.set(ref, secret);
      return ref;
    },
    delete: async (ref: string) => void secrets.delete(ref),
  };
  const sources = gaugeSourceRepo(env);
  const gauge = createGaugeService({
    env,
    sources,
    data: gaugeDataRepo(env),
    vault,
    audit: auditRepo(env),
    actor: { setupChanged: () => undefined, refresh: async () => [] },
    settings: () => ({ enabled: true, retentionDays: 30 }),
  });
  return { dir, env, sources, secrets, gauge, afterNextCommit: (run: () => void) => (pending = run) };
}

async function withAccount() {
  const world = started();
  const { id } = await world.gauge.createAccount(
    { providerId: 'openrouter', authMode: 'api_key', credential: 'sk-or-old' },
    actor,
    'req_0',
  );
  return { world, id };
}

/** Not stored, no credential left, and none after the store is reopened. */
async function assertRemoved(world: ReturnType<typeof started>, id: string) {
  assert.equal(world.sources.get(id), undefined);
  assert.deepEqual([...world.secrets.keys()], [], 'no credential is left in the vault');
  await world.env.close();
  const again = started(world.dir, world.secrets);
  try {
    assert.equal(again.sources.get(id), undefined);
  } finally {
    await again.env.close();
  }
}

test('a change racing the removal of its Gauge account answers NOT_FOUND and writes nothing', async () => {
  const { world, id } = await withAccount();
  const [removed, changed] = await race(
    () => world.gauge.removeAccount(id, actor, 'req_1'),
    () => world.gauge.updateAccount(id, { label: 'x' }, actor, 'req_2', false),
  );
  answered(removed);
  assertNotFound(changed, /^No Gauge account with ID `acct_/);
  assert.deepEqual(auditedActions(world.env, id), ['gauge-account.create', 'gauge-account.delete']);
  await assertRemoved(world, id);
});

test('a removal queued right behind a committed credential change deletes the new credential', async () => {
  const { world, id } = await withAccount();
  let removal: Promise<void> | undefined;
  // The removal reads the account (the old credential) before the change's commit resolves.
  world.afterNextCommit(() => (removal = world.gauge.removeAccount(id, actor, 'req_2')));
  await world.gauge.updateAccount(id, { credential: 'sk-or-new' }, actor, 'req_1', false);
  await removal;
  assert.deepEqual(auditedActions(world.env, id), [
    'gauge-account.create',
    'gauge-account.update',
    'gauge-account.delete',
  ]);
  await assertRemoved(world, id);
});
