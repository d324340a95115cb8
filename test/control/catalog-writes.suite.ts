import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { createCatalogService, type CatalogService } from '../../control/catalog-service.ts';
import type { Catalog } from '../../protocol/catalog.ts';
import { buildCatalog, createCatalogMirror, type CatalogChange } from '../../state/catalog-index.ts';
import { answersAfterAcknowledgement, heldFollower } from '../helpers/held-follower.ts';
import { createProviderService, type ProviderService } from '../../control/provider-service.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { EndpointFamily } from '../../protocol/families.ts';
import type { ProviderKind, UpstreamModel } from '../../protocol/providers.ts';
import { auditRepo } from '../../store/audit-repo.ts';
import { openStoreEnv, type StoreEnv } from '../../store/env.ts';
import { modelRepo, type ModelRepo } from '../../store/model-repo.ts';
import { providerRepo, type ProviderRepo } from '../../store/provider-repo.ts';
import type { Vault } from '../../store/vault/index.ts';
import { prng, type Rng } from '../helpers/prng.ts';
import { answered, assertNotFound, auditedActions, race } from '../helpers/races.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

// Catalog writes update the resolved catalog in place (catalog-index.ts). Whatever mix of model creates,
// updates and deletes, alias changes, provider switches and model-list refreshes runs (some of them
// concurrently), the catalog must equal one built whole from what the store then holds.

const dirs: string[] = [];
const envs: StoreEnv[] = [];
after(async () => {
  for (const env of envs) await env.close();
  removeDirs(dirs);
});

const actor = { actorType: 'system', actorId: 'test' } as const;
const UPSTREAM_IDS = ['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'org/m6', 'a'.repeat(401)];
const ALIASES = ['fast', 'smart', 'cheap', 'p1/m0', 'big', 'x:y'];
const FAMILIES: Record<string, EndpointFamily[]> = {
  openai_compatible: ['styleA.chat_completions', 'styleA.embeddings', 'rerank.documents'],
  llamacpp: ['styleA.chat_completions', 'styleB.messages'],
};

interface World {
  dir: string;
  env: StoreEnv;
  models: ModelRepo;
  providerStore: ProviderRepo;
  catalog: CatalogService;
  providers: ProviderService;
  /** What each provider's upstream lists now. */
  lists: Map<string, UpstreamModel[]>;
}

function world(dir = tempDataDir(dirs)): World {
  const env = openStoreEnv(dir);
  envs.push(env);
  const models = modelRepo(env);
  const providerStore = providerRepo(env);
  const audit = auditRepo(env);
  const lists = new Map<string, UpstreamModel[]>();
  const catalog = createCatalogService({ env, models, audit, providers: () => providerStore.all() });
  const providers = createProviderService({
    env,
    providers: providerStore,
    models,
    audit,
    vault: {} as Vault, // no provider here has a credential
    lister: async (target) => ({ models: [...(lists.get(target.id) ?? [])], withheld: 0 }),
    onChange: (id, record, listing) => catalog.providerChanged(id, record, listing),
    log: pino({ level: 'silent' }),
    bus: { publish: () => undefined as never },
  });
  return { dir, env, models, providerStore, catalog, providers, lists };
}

const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
const some = <T>(rng: Rng, items: readonly T[], p: number): T[] => items.filter(() => rng() < p);

/** The catalog as a plain value: every list, every lookup a reader makes. */
function view(c: Catalog, providerIds: readonly string[]) {
  const names = new Set<string>([...c.all().map((m) => m.id), ...ALIASES]);
  return {
    all: c.all(),
    discoverable: c.discoverable(),
    resolved: [...names].sort().map((n) => [n, c.resolve(n), c.aliasOwner(n)]),
    providers: providerIds.map((id) => c.provider(id) ?? null),
  };
}

function assertMatchesStore(w: World, providerIds: readonly string[], context: string): void {
  const whole = buildCatalog(w.providerStore.all(), w.models.all(), w.models.allListings());
  assert.deepEqual(view(w.catalog.current(), providerIds), view(whole, providerIds), context);
}

/** Expected refusals (conflicts, rule checks) are part of the mix; anything else fails the test. */
async function attempt(op: Promise<unknown>): Promise<void> {
  try {
    await op;
  } catch (err) {
    if (!(err instanceof ServiceError) || !['CONFLICT', 'INVALID_REQUEST', 'NOT_FOUND'].includes(err.code)) throw err;
  }
}

/** One random write; `ids` are the provider IDs that may exist. */
function randomWrite(w: World, rng: Rng, ids: readonly string[]): Promise<unknown> {
  const providerId = pick(rng, ids);
  const kind: ProviderKind = providerId === 'p2' ? 'llamacpp' : 'openai_compatible';
  const existing = w.catalog.current().all();
  const r = rng();
  if (r < 0.3) {
    return w.catalog.create(
      {
        providerId,
        upstreamModelId: pick(rng, UPSTREAM_IDS.slice(0, 7)),
        ...(rng() < 0.8 && { families: [pick(rng, FAMILIES[kind]!)] }),
        ...(rng() < 0.5 && { aliases: some(rng, ALIASES, 0.3) }),
        ...(rng() < 0.2 && { hidden: true }),
      },
      actor,
      'req',
    );
  }
  if (r < 0.5 && existing.length > 0) {
    const target = pick(rng, existing).id;
    return w.catalog.update(
      target,
      {
        ...(rng() < 0.5 && { aliases: some(rng, ALIASES, 0.3) }),
        ...(rng() < 0.3 && { hidden: rng() < 0.5 }),
        ...(rng() < 0.3 && { displayName: `name ${Math.floor(rng() * 100)}` }),
        ...(rng() < 0.2 && { contextWindow: 4096 }),
      },
      actor,
      'req',
    );
  }
  if (r < 0.62 && existing.length > 0) return w.catalog.remove(pick(rng, existing).id, actor, 'req');
  if (r < 0.74) {
    const patch = rng() < 0.5 ? { enabled: rng() < 0.6 } : { autoProxyModels: rng() < 0.7 };
    return w.providers.update(providerId, patch, actor, 'req', true);
  }
  if (r < 0.9) {
    const listed = some(rng, UPSTREAM_IDS, 0.5).map((upstreamModelId) => ({
      upstreamModelId,
      displayName: rng() < 0.5 ? null : `listed ${upstreamModelId.slice(0, 10)}`,
      created: Math.floor(rng() * 1e9),
      contextWindow: null,
      families: rng() < 0.15 ? [] : [pick(rng, FAMILIES[kind]!)],
    }));
    w.lists.set(providerId, listed);
    return w.providers.refreshModels(providerId, actor, 'req');
  }
  if (w.providers.record(providerId)) return w.providers.remove(providerId, actor, 'req');
  return w.providers.create(
    { id: providerId, kind, baseUrl: 'http://127.0.0.1:9/v1', autoProxyModels: rng() < 0.7 },
    actor,
    'req',
  );
}

describe('incremental catalog writes', () => {
  for (const seed of [1, 2, 3]) {
    it(`equal a whole rebuild from the store after every batch of a random mix (seed ${seed})`, async () => {
      const rng = prng(seed);
      const w = world();
      const ids = ['p1', 'p2', 'p3'];
      for (const id of ids)
        await w.providers.create(
          { id, kind: id === 'p2' ? 'llamacpp' : 'openai_compatible', baseUrl: 'http://127.0.0.1:9/v1' },
          actor,
          'req',
        );
      for (let step = 0; step < 60; step++) {
        // One to four writes at once: concurrent writes commit in one batch and must still land in order.
        const batch = Array.from({ length: 1 + Math.floor(rng() * 4) }, () => attempt(randomWrite(w, rng, ids)));
        await Promise.all(batch);
        // Background refreshes (a provider created, enabled or switched to autoProxyModels) end first.
        await w.providers.idle();
        assertMatchesStore(w, ids, `seed ${seed}, step ${step}`);
      }
      assert.ok(w.catalog.current().all().length > 0, 'the mix left something to compare');
    });
  }

  it('a list a reader holds does not change under it', async () => {
    const w = world();
    await w.providers.create(
      { id: 'p1', kind: 'openai_compatible', baseUrl: 'http://127.0.0.1:9/v1', autoProxyModels: false },
      actor,
      'req',
    );
    await w.catalog.create(
      { providerId: 'p1', upstreamModelId: 'b', families: ['styleA.chat_completions'] },
      actor,
      'req',
    );
    const held = w.catalog.current().all();
    const heldDiscoverable = w.catalog.current().discoverable();
    await w.catalog.create(
      { providerId: 'p1', upstreamModelId: 'a', families: ['styleA.chat_completions'] },
      actor,
      'req',
    );
    await w.catalog.remove('p1/b', actor, 'req');
    assert.deepEqual(
      held.map((m) => m.id),
      ['p1/b'],
    );
    assert.deepEqual(
      heldDiscoverable.map((m) => m.id),
      ['p1/b'],
    );
    assert.deepEqual(
      w.catalog
        .current()
        .all()
        .map((m) => m.id),
      ['p1/a'],
    );
  });
});

describe('catalog writes and the store', () => {
  it('a write reads no whole table of the store: it touches its own entry only', async () => {
    const w = world();
    let wholeReads = 0;
    const counting: ModelRepo = {
      ...w.models,
      all: () => (wholeReads++, w.models.all()),
      allListings: () => (wholeReads++, w.models.allListings()),
    };
    const providerStore: ProviderRepo = { ...w.providerStore, all: () => (wholeReads++, w.providerStore.all()) };
    const catalog = createCatalogService({
      env: w.env,
      models: counting,
      audit: auditRepo(w.env),
      providers: () => providerStore.all(),
    });
    const providers = createProviderService({
      env: w.env,
      providers: providerStore,
      models: counting,
      audit: auditRepo(w.env),
      vault: {} as Vault,
      lister: async () => ({
        models: [
          {
            upstreamModelId: 'listed',
            displayName: null,
            created: null,
            contextWindow: null,
            families: ['styleA.chat_completions'],
          },
        ],
        withheld: 0,
      }),
      onChange: (id, record, listing) => catalog.providerChanged(id, record, listing),
      log: pino({ level: 'silent' }),
      bus: { publish: () => undefined as never },
    });
    wholeReads = 0; // building both at start reads everything once
    await providers.create(
      { id: 'p1', kind: 'openai_compatible', baseUrl: 'http://127.0.0.1:9/v1', autoProxyModels: false },
      actor,
      'req',
    );
    for (let i = 0; i < 20; i++)
      await catalog.create(
        { providerId: 'p1', upstreamModelId: `m${i}`, families: ['styleA.chat_completions'], aliases: [`alias-${i}`] },
        actor,
        'req',
      );
    await catalog.update('p1/m3', { aliases: ['renamed'], hidden: true }, actor, 'req');
    await catalog.remove('p1/m4', actor, 'req');
    await providers.update('p1', { autoProxyModels: true }, actor, 'req', true);
    await providers.refreshModels('p1', actor, 'req');
    assert.equal(wholeReads, 0);
    assert.equal(catalog.current().resolve('renamed'), null, 'hidden');
    assert.equal(catalog.current().aliasOwner('renamed'), 'p1/m3');
    assert.equal(catalog.current().aliasOwner('alias-3'), undefined);
    assert.equal(catalog.current().get('p1/listed')?.source, 'auto');
    await providers.close();
  });

  it('two concurrent creates of one ID, or of one alias: one succeeds, the other is a 409', async () => {
    const w = world();
    await w.providers.create(
      { id: 'p1', kind: 'openai_compatible', baseUrl: 'http://127.0.0.1:9/v1', autoProxyModels: false },
      actor,
      'req',
    );
    const body = (upstreamModelId: string, aliases: string[]) => ({
      providerId: 'p1',
      upstreamModelId,
      families: ['styleA.chat_completions' as const],
      aliases,
    });
    const sameId = await Promise.allSettled([
      w.catalog.create(body('twin', []), actor, 'a'),
      w.catalog.create(body('twin', []), actor, 'b'),
    ]);
    assert.deepEqual(sameId.map((s) => s.status).sort(), ['fulfilled', 'rejected']);
    const sameAlias = await Promise.allSettled([
      w.catalog.create(body('one', ['shared']), actor, 'a'),
      w.catalog.create(body('two', ['shared']), actor, 'b'),
    ]);
    assert.deepEqual(sameAlias.map((s) => s.status).sort(), ['fulfilled', 'rejected']);
    for (const s of [...sameId, ...sameAlias])
      if (s.status === 'rejected') assert.equal((s.reason as ServiceError).code, 'CONFLICT');
    const owners = w.models.all().filter((r) => r.aliases.includes('shared'));
    assert.equal(owners.length, 1, 'the store holds one owner of the alias');
    assertMatchesStore(w, ['p1'], 'after the races');
  });
});

/** A copy on a far thread whose acknowledgement of each change the test gives by hand. */
function farCopy(catalog: CatalogService) {
  const far = createCatalogMirror();
  const held = heldFollower((change: CatalogChange) => far.apply(change));
  catalog.follow(held.follow);
  return { far, held };
}

describe('catalog writes and the copies other threads keep', () => {
  const body = { providerId: 'p1', upstreamModelId: 'm', families: ['styleA.chat_completions' as const] };
  async function withModel(): Promise<World> {
    const w = world();
    const p1 = {
      id: 'p1',
      kind: 'openai_compatible' as const,
      baseUrl: 'http://127.0.0.1:9/v1',
      autoProxyModels: false,
    };
    await w.providers.create(p1, actor, 'req');
    await w.catalog.create(body, actor, 'req');
    return w;
  }

  it('hiding a model answers once every copy has it: the next request on any edge thread sees it hidden', async () => {
    const w = await withModel();
    const copy = farCopy(w.catalog);
    assert.ok(copy.far.current().resolve('p1/m'));
    await answersAfterAcknowledgement(w.catalog.update('p1/m', { hidden: true }, actor, 'req'), copy.held);
    assert.equal(copy.far.current().resolve('p1/m'), null);
  });

  it("disabling a provider answers once every copy has it: none resolves the provider's models", async () => {
    const w = await withModel();
    const copy = farCopy(w.catalog);
    await answersAfterAcknowledgement(w.providers.update('p1', { enabled: false }, actor, 'req', false), copy.held);
    assert.equal(copy.far.current().resolve('p1/m'), null);
  });
});

describe('a catalog model write racing its removal (W4.6)', () => {
  async function withRecord(): Promise<World> {
    const w = world();
    await w.providers.create({ id: 'p1', kind: 'openai_compatible', baseUrl: 'http://127.0.0.1:9/v1' }, actor, 'req');
    await w.catalog.create(
      { providerId: 'p1', upstreamModelId: 'm', families: ['styleA.chat_completions'], aliases: ['fast'] },
      actor,
      'req',
    );
    return w;
  }
  /** Gone from the catalog, its copies, the store, and a catalog built from the store reopened. */
  /** A copy as an edge thread keeps it, acknowledging each change at once. */
  function followed(catalog: CatalogService) {
    const far = createCatalogMirror();
    catalog.follow((change) => void far.apply(change));
    return far;
  }
  async function assertRemoved(w: World, far: ReturnType<typeof createCatalogMirror>) {
    for (const c of [w.catalog.current(), far.current()]) {
      assert.equal(c.get('p1/m'), undefined);
      assert.equal(c.resolve('fast'), null);
    }
    assert.deepEqual(w.models.all(), []);
    await w.providers.close();
    await w.env.close();
    const again = world(w.dir);
    assert.equal(again.catalog.current().get('p1/m'), undefined);
    assert.deepEqual(again.models.all(), []);
  }

  it('a change after the removal began answers NOT_FOUND and writes nothing', async () => {
    const w = await withRecord();
    const far = followed(w.catalog);
    const [removed, changed] = await race(
      () => w.catalog.remove('p1/m', actor, 'req_1'),
      () => w.catalog.update('p1/m', { hidden: true }, actor, 'req_2'),
    );
    answered(removed);
    assertNotFound(changed, /^No catalog model with ID `p1\/m`/);
    assert.deepEqual(auditedActions(w.env, 'p1/m'), ['model.create', 'model.delete']);
    await assertRemoved(w, far);
  });

  it('a removal racing an earlier change still removes the model', async () => {
    const w = await withRecord();
    const far = followed(w.catalog);
    const [changed, removed] = await race(
      () => w.catalog.update('p1/m', { displayName: 'x' }, actor, 'req_1'),
      () => w.catalog.remove('p1/m', actor, 'req_2'),
    );
    answered(changed);
    answered(removed);
    await assertRemoved(w, far);
  });
});
