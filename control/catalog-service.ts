import { ServiceError } from '../protocol/errors.ts';
import { translatedFamilies } from '../protocol/translation.ts';
import {
  directModelId,
  MODEL_ID_MAX,
  type ModelCreate,
  type ModelUpdate,
  type ModelView,
} from '../protocol/http/catalog.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { ModelListCache, ModelRecord, ModelRepo } from '../store/model-repo.ts';
import type { ProviderRecord } from '../store/provider-repo.ts';
import type { Actor } from './actor.ts';
import { newModelRecord, patchedModelRecord } from './catalog-records.ts';
import { checkRecord, checkRemovable } from './catalog-validation.ts';
import { auditedCrud } from './crud.ts';
import type { Catalog, CatalogModel } from '../protocol/catalog.ts';
import { buildCatalog, type CatalogChange } from '../state/catalog-index.ts';
import type { Follower } from '../state/followers.ts';
import type { CatalogFilter } from '../protocol/ports/catalog.ts';
import { resolvePricing, type PriceIndex, type ResolvedPricing } from '../state/price-index.ts';

export type { CatalogFilter };

export interface CatalogService {
  current(): Catalog;
  /** The catalog's inputs now, then each change: what an edge thread's copy follows (createCatalogMirror). */
  follow(listener: Follower<CatalogChange>): () => void;
  /**
   * A provider's record (null: deleted) or its model list (undefined: unchanged) was committed; only its
   * entries change. Settles once every follower of the catalog has the change.
   */
  providerChanged(id: string, provider: ProviderRecord | null, listing?: ModelListCache | null): Promise<void>;
  list(filter: CatalogFilter): ModelView[];
  get(id: string): ModelView;
  create(input: ModelCreate, actor: Actor, requestId: string): Promise<ModelView>;
  update(id: string, patch: ModelUpdate, actor: Actor, requestId: string): Promise<ModelView>;
  remove(id: string, actor: Actor, requestId: string): Promise<void>;
}

interface Deps {
  env: StoreEnv;
  models: ModelRepo;
  audit: AuditRepo;
  /** Read once, at start: afterwards the provider service tells of each change. */
  providers(): readonly ProviderRecord[];
  /** The price database behind models without `pricing`; without it only catalog prices count. */
  prices?: PriceIndex;
}

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

/** A model as routes show it; `priced` is the price the meter uses for it now and where that came from. */
export function toModelView(
  m: CatalogModel,
  priced: ResolvedPricing = resolvePricing(m, undefined, undefined),
): ModelView {
  const { created: _created, ...view } = m;
  return {
    ...view,
    families: [...view.families],
    translatedFamilies: translatedFamilies(view.families),
    aliases: [...view.aliases],
    effectivePricing: priced.pricing,
    pricingSource: priced.source,
  };
}

const notFound = (id: string) =>
  new ServiceError('NOT_FOUND', `No catalog model with ID \`${id.slice(0, 200)}\`.`, { param: 'id' });

export function createCatalogService({ env, models, audit, providers, prices }: Deps): CatalogService {
  const catalog = buildCatalog(providers(), models.all(), models.allListings());
  const view = (m: CatalogModel) => toModelView(m, resolvePricing(m, catalog.provider(m.providerId), prices));
  // IDs and aliases of writes between their checks and their commit: two concurrent creates of one ID, or two
  // writes claiming one alias, would both pass the checks and both commit.
  const pendingIds = new Set<string>();
  /** Alias -> the model claiming it, and how many of that model's writes do. */
  const pendingAliases = new Map<string, { id: string; writes: number }>();
  const crud = auditedCrud<ModelRecord>({
    env,
    audit,
    resourceType: 'model',
    repo: models,
    keyOf: (r) => r.id,
    notFound,
  });

  const mustGet = (id: string): CatalogModel => {
    const m = id.length > MODEL_ID_MAX ? undefined : catalog.get(id);
    if (!m) throw notFound(id);
    return m;
  };

  async function save(
    record: ModelRecord,
    {
      action,
      actor,
      requestId,
      changed,
      replaces,
    }: {
      action: 'model.create' | 'model.update';
      actor: Actor;
      requestId: string;
      changed: string[];
      /** Whether a record is stored under its ID (an update of an auto model creates its first). */
      replaces: boolean;
    },
  ) {
    // checkRecord ran in this same synchronous stretch: no other write claimed these since.
    for (const alias of record.aliases) {
      const claim = pendingAliases.get(alias);
      if (claim) claim.writes++;
      else pendingAliases.set(alias, { id: record.id, writes: 1 });
    }
    if (action === 'model.create') pendingIds.add(record.id);
    try {
      const entry = { action, actor, requestId, metadata: { providerId: record.providerId, changedFields: changed } };
      await (replaces ? crud.update(record, entry) : crud.create(record, entry));
    } finally {
      for (const alias of record.aliases) if (--pendingAliases.get(alias)!.writes === 0) pendingAliases.delete(alias);
      if (action === 'model.create') pendingIds.delete(record.id);
    }
    // After the commit, in commit order: the catalog never shows what the store may still lose. The answer
    // waits until every edge thread's copy has the change too.
    catalog.putRecord(record);
    // Read before the wait: a removal that committed after this write may take the model out meanwhile.
    const written = view(mustGet(record.id));
    await catalog.settled();
    return written;
  }

  return {
    current: () => catalog,
    follow: (listener) => catalog.follow(listener),
    providerChanged(id, provider, listing) {
      catalog.putProvider(id, provider, listing);
      return catalog.settled();
    },
    list(f) {
      return catalog
        .all()
        .filter((m) => matches(m, f))
        .map(view);
    },
    get: (id) => view(mustGet(id)),

    async create(input, actor, requestId) {
      const provider = catalog.provider(input.providerId);
      if (!provider) throw invalid('providerId', `No provider with ID \`${input.providerId}\`.`);
      const id = directModelId(provider.id, input.upstreamModelId);
      if (catalog.record(id) !== undefined || pendingIds.has(id))
        throw new ServiceError('CONFLICT', `Catalog model \`${id}\` already exists.`, { param: 'upstreamModelId' });
      const auto = catalog.get(id);
      const families = input.families ?? auto?.families;
      if (families === undefined || families.length === 0) {
        throw invalid('families', 'Name the endpoint families: the provider has not reported this model.');
      }
      const record = newModelRecord(input, id, provider.id, auto, families);
      checkRecord(record, provider, catalog, pendingAliases);
      return save(record, {
        action: 'model.create',
        actor,
        requestId,
        changed: Object.keys(input).sort(),
        replaces: false,
      });
    },

    async update(id, patch, actor, requestId) {
      const current = mustGet(id);
      const provider = catalog.provider(current.providerId)!;
      // Patching an auto model turns it into an explicit record (to hide it, alias it, price it).
      const stored = catalog.record(id);
      const next = patchedModelRecord(id, current, stored, patch);
      checkRecord(next, provider, catalog, pendingAliases);
      const changed = Object.keys(patch).sort();
      return save(next, { action: 'model.update', actor, requestId, changed, replaces: stored !== undefined });
    },

    async remove(id, actor, requestId) {
      const current = mustGet(id);
      checkRemovable(id, current, catalog);
      await crud.remove(id, { action: 'model.delete', actor, requestId, metadata: { providerId: current.providerId } });
      catalog.removeRecord(id);
      await catalog.settled();
    },
  };
}

function matches(m: CatalogModel, f: CatalogFilter): boolean {
  return (
    (f.providerId === undefined || m.providerId === f.providerId) &&
    (f.source === undefined || m.source === f.source) &&
    (f.family === undefined || m.families.includes(f.family)) &&
    (f.hidden === undefined || m.hidden === f.hidden)
  );
}
