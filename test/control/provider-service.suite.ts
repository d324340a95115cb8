import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { createCatalogService, type CatalogService } from '../../control/catalog-service.ts';
import { createProviderService, type ProviderService } from '../../control/provider-service.ts';
import { auditRepo } from '../../store/audit-repo.ts';
import { openStoreEnv, type StoreEnv } from '../../store/env.ts';
import { modelRepo } from '../../store/model-repo.ts';
import { providerRepo, type ProviderRepo } from '../../store/provider-repo.ts';
import type { Vault } from '../../store/vault/index.ts';
import { answered, assertNotFound, auditedActions, race } from '../helpers/races.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

// A provider write racing another write of the same provider (W4.6 item 1): a change racing the removal must not
// bring the provider back, and the vault must end holding exactly the credential the stored record names.

const dirs: string[] = [];
after(() => removeDirs(dirs));
const actor = { actorType: 'system', actorId: 'test' } as const;
const P1 = { id: 'p1', kind: 'openai_compatible' as const, baseUrl: 'http://127.0.0.1:9/v1', autoProxyModels: false };

/** A vault in memory that counts what it is asked to store. */
function memoryVault() {
  const secrets = new Map<string, string>();
  let n = 0;
  const vault = {
    info: { backend: 'file', persistent: true },
    puts: 0,
    secrets,
    async put(secret: string) {
      vault.puts++;
      const ref = `cred_${++n}`;
      secrets.set(ref, secret);
      return ref;
    },
    get: async (ref: string) => secrets.get(ref) ?? null,
    delete: async (ref: string) => void secrets.delete(ref),
  };
  return vault;
}

interface World {
  dir: string;
  env: StoreEnv;
  store: ProviderRepo;
  vault: ReturnType<typeof memoryVault>;
  providers: ProviderService;
  catalog: CatalogService;
  /** Runs once, right after the next commit is queued: a write made there queues its own commit behind it. */
  afterNextCommit(run: () => void): void;
}

function world(dir = tempDataDir(dirs), vault = memoryVault()): World {
  const opened = openStoreEnv(dir);
  let pending: (() => void) | null = null;
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
  const store = providerRepo(env);
  const models = modelRepo(env);
  const audit = auditRepo(env);
  const catalog = createCatalogService({ env, models, audit, providers: () => store.all() });
  const providers = createProviderService({
    env,
    providers: store,
    models,
    audit,
    vault: vault as unknown as Vault,
    lister: async () => ({ models: [], withheld: 0 }),
    onChange: (id, record, listing) => catalog.providerChanged(id, record, listing),
    log: pino({ level: 'silent' }),
    bus: { publish: () => undefined as never },
  });
  return { dir, env, store, vault, providers, catalog, afterNextCommit: (run) => (pending = run) };
}

async function withProvider(): Promise<World> {
  const w = world();
  await w.providers.create({ ...P1, credential: 'sk-old' }, actor, 'req_0');
  return w;
}

/** Not listed, not in the catalog, not stored, no secret left, and none of it after the store is reopened. */
async function assertRemoved(w: World): Promise<void> {
  assert.deepEqual(w.providers.list(), []);
  assert.equal(w.catalog.current().provider('p1'), undefined);
  assert.deepEqual(w.store.all(), []);
  assert.deepEqual([...w.vault.secrets.keys()], [], 'no credential is left in the vault');
  await w.providers.close();
  await w.env.close();
  const again = world(w.dir, w.vault);
  try {
    assert.deepEqual(again.providers.list(), []);
    assert.equal(again.catalog.current().provider('p1'), undefined);
  } finally {
    await again.providers.close();
    await again.env.close();
  }
}

describe('a provider change racing its removal (W4.6)', () => {
  it('a change after the removal began answers NOT_FOUND and writes nothing', async () => {
    const w = await withProvider();
    const [removed, changed] = await race(
      () => w.providers.remove('p1', actor, 'req_1'),
      () => w.providers.update('p1', { displayName: 'x' }, actor, 'req_2', false),
    );
    answered(removed);
    assertNotFound(changed, /^No provider with ID `p1`/);
    assert.deepEqual(auditedActions(w.env, 'p1'), ['provider.create', 'provider.delete']);
    await assertRemoved(w);
  });

  it('a new credential after the removal began is never stored in the vault', async () => {
    const w = await withProvider();
    const puts = w.vault.puts;
    const [removed, changed] = await race(
      () => w.providers.remove('p1', actor, 'req_1'),
      () => w.providers.update('p1', { credential: 'sk-new' }, actor, 'req_2', false),
    );
    answered(removed);
    assertNotFound(changed, /^No provider with ID `p1`/);
    assert.equal(w.vault.puts, puts, 'the vault was written for a provider being removed');
    await assertRemoved(w);
  });

  it('a removal racing an earlier credential change removes the provider and both credentials', async () => {
    const w = await withProvider();
    const [changed, removed] = await race(
      () => w.providers.update('p1', { credential: 'sk-new' }, actor, 'req_1', false),
      () => w.providers.remove('p1', actor, 'req_2'),
    );
    // The change waits for the vault before it commits, so the removal commits first.
    assertNotFound(changed, /^No provider with ID `p1`/);
    answered(removed);
    await assertRemoved(w);
  });

  it('a removal right behind a committed credential change deletes the new credential, not the old twice', async () => {
    const w = await withProvider();
    let removal: Promise<void> | undefined;
    // The removal reads the provider (the old credential) before the change's commit resolves.
    w.afterNextCommit(() => (removal = w.providers.remove('p1', actor, 'req_2')));
    const changed = await w.providers.update('p1', { credential: 'sk-new' }, actor, 'req_1', false);
    assert.equal(changed.credentialConfigured, true);
    await removal;
    assert.deepEqual(auditedActions(w.env, 'p1'), ['provider.create', 'provider.update', 'provider.delete']);
    await assertRemoved(w);
  });
});

describe('provider changes racing each other', () => {
  it('both answer, and the record names the one credential the vault still holds', async () => {
    const w = await withProvider();
    let renamed: Promise<unknown> | undefined;
    // A rename that read the old credential commits right after the credential change: it keeps the new one.
    w.afterNextCommit(() => (renamed = w.providers.update('p1', { displayName: 'renamed' }, actor, 'req_2', false)));
    await w.providers.update('p1', { credential: 'sk-new' }, actor, 'req_1', false);
    await renamed;
    const [record] = w.store.all();
    assert.equal(record?.displayName, 'renamed');
    assert.deepEqual([...w.vault.secrets.entries()], [[record?.credentials[0]?.ref, 'sk-new']]);
    assert.equal(record?.credentials.length, 1);
    assert.equal(w.providers.get('p1').credentialConfigured, true);
    await w.providers.close();
    await w.env.close();
  });
});
