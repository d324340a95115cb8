import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { createCatalogService, type CatalogService } from '../../control/catalog-service.ts';
import { createProviderService, type ProviderService } from '../../control/provider-service.ts';
import { upgradeProviders } from '../../control/provider-upgrade.ts';
import { checkCredential, usableCredentials } from '../../protocol/catalog.ts';
import type { ServiceError } from '../../protocol/errors.ts';
import { auditRepo } from '../../store/audit-repo.ts';
import { openStoreEnv, type StoreEnv } from '../../store/env.ts';
import { modelRepo } from '../../store/model-repo.ts';
import { providerRepo, type LegacyProviderRecord, type ProviderRepo } from '../../store/provider-repo.ts';
import type { Vault } from '../../store/vault/index.ts';
import { DEFAULT_TIMEOUTS } from '../../protocol/providers.ts';
import { answered, assertNotFound, race } from '../helpers/races.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

// A provider's credentials (W4.2 item 1): kept inside the provider's record, each key in the vault under its
// own reference. Every write is checked against the record as stored, so a write racing a removal brings
// nothing back and leaves no key in the vault; a key the upstream refused is set aside once, announced once.

const dirs: string[] = [];
after(() => removeDirs(dirs));
const actor = { actorType: 'token', actorId: 'tok_test' } as const;
const P1 = { id: 'p1', kind: 'openai' as const, baseUrl: 'http://127.0.0.1:9/v1', autoProxyModels: false };

function memoryVault() {
  const secrets = new Map<string, string>();
  let n = 0;
  const vault = {
    info: { backend: 'file', persistent: true },
    secrets,
    puts: 0,
    async put(secret: string) {
      vault.puts++;
      const ref = `ref_${++n}`;
      secrets.set(ref, secret);
      return ref;
    },
    get: async (ref: string) => secrets.get(ref) ?? null,
    delete: async (ref: string) => void secrets.delete(ref),
  };
  return vault;
}

interface World {
  env: StoreEnv;
  store: ProviderRepo;
  vault: ReturnType<typeof memoryVault>;
  providers: ProviderService;
  catalog: CatalogService;
  events: { type: string; data: Record<string, unknown> }[];
  close(): Promise<void>;
}

function world(dir = tempDataDir(dirs), vault = memoryVault()): World {
  const env = openStoreEnv(dir);
  const store = providerRepo(env);
  const models = modelRepo(env);
  const audit = auditRepo(env);
  const catalog = createCatalogService({ env, models, audit, providers: () => store.all() });
  const events: World['events'] = [];
  const providers = createProviderService({
    env,
    providers: store,
    models,
    audit,
    vault: vault as unknown as Vault,
    lister: async () => ({ models: [], withheld: 0 }),
    onChange: (id, record, listing) => catalog.providerChanged(id, record, listing),
    log: pino({ level: 'silent' }),
    bus: { publish: (type, data) => void events.push({ type, data: data as Record<string, unknown> }) as never },
  });
  const close = async () => {
    await providers.close();
    await env.close();
  };
  return { env, store, vault, providers, catalog, events, close };
}

const audits = (env: StoreEnv) =>
  auditRepo(env)
    .query({ resourceId: 'p1', limit: 500 })
    .data.reverse()
    .map((e) => ({ action: e.action, metadata: e.metadata }));

async function withKeys(...labels: string[]): Promise<World> {
  const w = world();
  await w.providers.create(P1, actor, 'req_0');
  for (const label of labels)
    await w.providers.addCredential('p1', { label, credential: `sk-${label}-secret` }, actor, 'req_1');
  return w;
}

const ids = (w: World) => w.providers.listCredentials('p1') as { id: string; label: string }[];

/** The vault holds exactly the keys the stored record names, each once. */
function assertVaultMatches(w: World): void {
  const refs = (w.store.get('p1')?.credentials ?? []).map((c) => c.ref).sort();
  assert.deepEqual([...w.vault.secrets.keys()].sort(), refs);
}

const rejects = async (p: Promise<unknown>, code: string, param: string | null) =>
  assert.rejects(p, (err: ServiceError) => {
    assert.equal(err.code, code, err.message);
    assert.equal(err.param, param);
    return true;
  });

describe('a provider`s credentials', () => {
  it('are added in order with defaults, listed without key or reference, audited without label', async () => {
    const w = await withKeys('work', 'home');
    const list = ids(w);
    assert.deepEqual(
      list.map((c) => c.label),
      ['work', 'home'],
    );
    const [first] = w.providers.listCredentials('p1') as Awaited<ReturnType<ProviderService['listCredentials']>>;
    assert.match(first!.id, /^key_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.deepEqual(Object.keys(first!).sort(), [
      'coolingUntil',
      'createdAt',
      'enabled',
      'headroom',
      'id',
      'label',
      'rejected',
      'rejectedAt',
      'sessions',
      'updatedAt',
      'weight',
    ]);
    assert.equal(first!.weight, 1);
    assert.equal(first!.enabled, true);
    assert.equal(first!.rejected, false);
    assert.equal(w.providers.get('p1').credentials, 2);
    assert.equal(w.providers.get('p1').credentialConfigured, true);
    assert.deepEqual([...w.vault.secrets.values()].sort(), ['sk-home-secret', 'sk-work-secret']);
    const text = JSON.stringify([w.providers.listCredentials('p1'), audits(w.env)]);
    assert.ok(!/secret|ref_/.test(text), text);
    assert.deepEqual(
      audits(w.env).map((a) => a.action),
      ['provider.create', 'credential.create', 'credential.create'],
    );
    assert.deepEqual(audits(w.env)[1]!.metadata, { credentialId: list[0]!.id, weight: 1, enabled: true });
    // The catalog every call reads has them too, in order.
    assert.deepEqual(
      w.catalog
        .current()
        .provider('p1')
        ?.credentials.map((c) => c.label),
      ['work', 'home'],
    );
    await w.close();
  });

  it('refuses a taken label, a 17th key, a bad label, and any key for a kind that takes none', async () => {
    const w = await withKeys('work');
    await rejects(
      w.providers.addCredential('p1', { label: 'work', credential: 'sk-x' }, actor, 'r'),
      'CONFLICT',
      'label',
    );
    const keyLike = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123';
    for (const label of ['two\nlines', '   ', keyLike, 'same-as-key'])
      await rejects(
        w.providers.addCredential('p1', { label, credential: label === keyLike ? 'sk-y' : 'same-as-key' }, actor, 'r'),
        'INVALID_REQUEST',
        'label',
      );
    await rejects(
      w.providers.addCredential('p1', { label: 'sp', credential: 'has space' }, actor, 'r'),
      'INVALID_REQUEST',
      'credential',
    );
    for (let i = 2; i <= 16; i++)
      await w.providers.addCredential('p1', { label: `k${i}`, credential: `sk-${i}` }, actor, 'r');
    await rejects(
      w.providers.addCredential('p1', { label: 'k17', credential: 'sk-17' }, actor, 'r'),
      'INVALID_REQUEST',
      'credential',
    );
    assert.equal(ids(w).length, 16);
    assertVaultMatches(w);
    await w.providers.create({ id: 'local', kind: 'embedded' }, actor, 'r');
    await rejects(
      w.providers.addCredential('local', { label: 'x', credential: 'sk-x' }, actor, 'r'),
      'INVALID_REQUEST',
      'credential',
    );
    await rejects(w.providers.addCredential('nope', { label: 'x', credential: 'sk-x' }, actor, 'r'), 'NOT_FOUND', 'id');
    await rejects(w.providers.updateCredential('p1', 'key_nope', {}, actor, 'r'), 'NOT_FOUND', 'credId');
    await rejects(w.providers.removeCredential('p1', `key_${'x'.repeat(5000)}`, actor, 'r'), 'NOT_FOUND', 'credId');
    await w.close();
  });

  it('a new key replaces the old one in the vault; a PATCH keeps the others; removal deletes the key', async () => {
    const w = await withKeys('work', 'home');
    const [work, home] = ids(w);
    const patched = await w.providers.updateCredential(
      'p1',
      work!.id,
      { credential: 'sk-work-2', weight: 5 },
      actor,
      'r',
    );
    assert.equal(patched.weight, 5);
    assert.deepEqual([...w.vault.secrets.values()].sort(), ['sk-home-secret', 'sk-work-2']);
    assertVaultMatches(w);
    await w.providers.removeCredential('p1', home!.id, actor, 'r');
    assert.deepEqual([...w.vault.secrets.values()], ['sk-work-2']);
    assertVaultMatches(w);
    assert.deepEqual(
      audits(w.env)
        .slice(3)
        .map((a) => a.metadata),
      [{ credentialId: work!.id, changedFields: ['credential', 'weight'] }, { credentialId: home!.id }],
    );
    await w.close();
  });

  it('PATCH of the provider with `credential` puts one `default` key for all; null removes all', async () => {
    const w = await withKeys('work', 'home');
    await w.providers.update('p1', { credential: 'sk-only' }, actor, 'r', false);
    assert.deepEqual(
      ids(w).map((c) => c.label),
      ['default'],
    );
    assert.deepEqual([...w.vault.secrets.values()], ['sk-only']);
    assertVaultMatches(w);
    await w.providers.update('p1', { credential: null }, actor, 'r', false);
    assert.deepEqual(ids(w), []);
    assert.equal(w.providers.get('p1').credentialConfigured, false);
    assert.equal(w.vault.secrets.size, 0);
    await w.close();
  });

  it('a call needs a usable key: the error counts the ones refused and disabled', async () => {
    const w = await withKeys('work', 'home');
    const [work, home] = ids(w);
    await w.providers.updateCredential('p1', work!.id, { enabled: false }, actor, 'r');
    await w.providers.rejectCredential('p1', home!.id, 401);
    const provider = w.catalog.current().provider('p1')!;
    assert.deepEqual(usableCredentials(provider), []);
    assert.throws(
      () => checkCredential({ provider }),
      (err: ServiceError) =>
        err.code === 'PROVIDER_CREDENTIAL_MISSING' &&
        JSON.stringify(err.details) === JSON.stringify({ providerId: 'p1', credentials: 2, rejected: 1, disabled: 1 }),
    );
    // Any edit tries the key again.
    await w.providers.updateCredential('p1', home!.id, {}, actor, 'r');
    assert.deepEqual(
      usableCredentials(w.catalog.current().provider('p1')!).map((c) => c.label),
      ['home'],
    );
    await w.close();
  });
});

describe('a key the upstream refused', () => {
  it('is set aside once: one commit, one audit record, one event; a second report does nothing', async () => {
    const w = await withKeys('work', 'home');
    const [, home] = ids(w);
    assert.equal(await w.providers.rejectCredential('p1', home!.id, 403), true);
    assert.equal(await w.providers.rejectCredential('p1', home!.id, 401), false);
    const view = (w.providers.listCredentials('p1') as { rejected: boolean; rejectedAt: string | null }[])[1]!;
    assert.equal(view.rejected, true);
    assert.match(view.rejectedAt ?? '', /^\d{4}-/);
    assert.deepEqual(w.events, [
      { type: 'credential.rejected', data: { providerId: 'p1', credentialId: home!.id, label: 'home', status: 403 } },
    ]);
    const rejected = auditRepo(w.env).query({ action: 'credential.reject', limit: 10 }).data;
    assert.equal(rejected.length, 1);
    assert.equal(rejected[0]!.actorType, 'system');
    assert.deepEqual(rejected[0]!.metadata, { credentialId: home!.id, status: 403 });
    await w.close();
  });

  it('two reports at once (two edge threads) set it aside once', async () => {
    const w = await withKeys('work');
    const [work] = ids(w);
    const [a, b] = await race(
      () => w.providers.rejectCredential('p1', work!.id, 401),
      () => w.providers.rejectCredential('p1', work!.id, 401),
    );
    assert.deepEqual([answered(a), answered(b)].sort(), [false, true]);
    assert.equal(w.events.length, 1);
    assert.equal(auditRepo(w.env).query({ action: 'credential.reject', limit: 10 }).data.length, 1);
    await rejects(w.providers.rejectCredential('p1', work!.id, 500), 'INVALID_REQUEST', 'status');
    await w.close();
  });
});

describe('credential writes racing removals', () => {
  it('a PATCH of a key racing its DELETE answers NOT_FOUND and brings nothing back', async () => {
    const w = await withKeys('work', 'home');
    const [work] = ids(w);
    const [removed, changed] = await race(
      () => w.providers.removeCredential('p1', work!.id, actor, 'r1'),
      () => w.providers.updateCredential('p1', work!.id, { label: 'back', credential: 'sk-back' }, actor, 'r2'),
    );
    answered(removed);
    assertNotFound(changed, /^Provider `p1` has no credential `key_/, 'credId');
    assert.deepEqual(
      ids(w).map((c) => c.label),
      ['home'],
    );
    assert.deepEqual(
      w.store.get('p1')?.credentials.map((c) => c.label),
      ['home'],
    );
    assertVaultMatches(w);
    assert.ok(![...w.vault.secrets.values()].includes('sk-back'), 'the losing PATCH left its key in the vault');
    await w.close();
  });

  it('a key added or edited while the provider is removed is not stored, and nothing comes back', async () => {
    const w = await withKeys('work');
    const [work] = ids(w);
    const puts = w.vault.puts;
    const [removed, added] = await race(
      () => w.providers.remove('p1', actor, 'r1'),
      () => w.providers.addCredential('p1', { label: 'late', credential: 'sk-late' }, actor, 'r2'),
    );
    answered(removed);
    assertNotFound(added, /^No provider with ID `p1`/);
    assert.equal(w.store.get('p1'), undefined);
    assert.equal(w.vault.puts, puts, 'a key was stored for a provider being removed');
    assert.equal(w.vault.secrets.size, 0);
    await w.providers.create(P1, actor, 'r3');
    await rejects(w.providers.updateCredential('p1', work!.id, {}, actor, 'r'), 'NOT_FOUND', 'credId');
    await w.close();
  });

  it('two adds at once both land, each under its own label', async () => {
    const w = await withKeys();
    const [a, b] = await race(
      () => w.providers.addCredential('p1', { label: 'a', credential: 'sk-a' }, actor, 'r1'),
      () => w.providers.addCredential('p1', { label: 'b', credential: 'sk-b' }, actor, 'r2'),
    );
    answered(a);
    answered(b);
    assert.deepEqual(
      w.store
        .get('p1')
        ?.credentials.map((c) => c.label)
        .sort(),
      ['a', 'b'],
    );
    assertVaultMatches(w);
    await w.close();
  });
});

describe('records stored with one key (before W4.2)', () => {
  const legacy = (id: string, credentialRef: string | null): LegacyProviderRecord => ({
    id,
    kind: 'openai',
    displayName: id,
    baseUrl: 'http://127.0.0.1:9/v1',
    enabled: true,
    autoProxyModels: false,
    credentialRef,
    hints: {},
    timeouts: { ...DEFAULT_TIMEOUTS },
    createdAt: 1000,
    updatedAt: 2000,
  });

  it('are rewritten at start in one commit, the key as `default` under its old reference, audited', async () => {
    const dir = tempDataDir(dirs);
    const env = openStoreEnv(dir);
    await env.commit(() => {
      env.db('providers').put('keyed', legacy('keyed', 'cred_OLD'));
      env.db('providers').put('keyless', legacy('keyless', null));
    });
    const store = providerRepo(env);
    assert.equal(store.legacy().length, 2);
    const seenBefore = store.all().find((r) => r.id === 'keyed')!.credentials;
    assert.equal(await upgradeProviders({ env, providers: store, audit: auditRepo(env) }), 2);
    assert.deepEqual(store.legacy(), []);
    const keyed = store.get('keyed')!;
    assert.deepEqual(keyed.credentials, seenBefore, 'a read before the upgrade names the same credential');
    assert.equal(keyed.credentials.length, 1);
    const [c] = keyed.credentials;
    assert.match(c!.id, /^key_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.deepEqual(
      { ...c, id: 'x' },
      {
        id: 'x',
        label: 'default',
        weight: 1,
        enabled: true,
        ref: 'cred_OLD',
        rejectedAt: null,
        createdAt: 2000,
        updatedAt: 2000,
      },
    );
    assert.ok(!('credentialRef' in keyed));
    assert.deepEqual(store.get('keyless')!.credentials, []);
    const events = auditRepo(env).query({ action: 'provider.upgrade', limit: 10 }).data;
    assert.deepEqual(events.map((e) => [e.resourceId, e.actorType, e.metadata.credentials]).sort(), [
      ['keyed', 'system', 1],
      ['keyless', 'system', 0],
    ]);
    // Run again, it finds nothing to do.
    assert.equal(await upgradeProviders({ env, providers: store, audit: auditRepo(env) }), 0);
    await env.close();
    // The same provider elsewhere (another data directory) gets the same credential ID.
    const env2 = openStoreEnv(tempDataDir(dirs));
    await env2.commit(() => env2.db('providers').put('keyed', legacy('keyed', 'cred_OTHER')));
    assert.equal(providerRepo(env2).get('keyed')!.credentials[0]!.id, c!.id);
    await env2.close();
  });
});
