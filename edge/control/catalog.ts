import { KINDS } from '../../protocol/providers.ts';
import { directModelId, UPSTREAM_MODEL_ID_MAX, type ModelView } from '../../protocol/http/catalog.ts';
import type { ModelListCache, ModelRecord } from '../../store/model-repo.ts';
import type { ProviderRecord } from '../../store/provider-repo.ts';

// The resolved catalog: the main thread's read-mostly view of providers and models, rebuilt whenever a
// write commits or a provider's model list changes. Resolution and discovery read only this.

export interface CatalogModel extends ModelView {
  /** Seconds since the epoch, for model lists. */
  created: number | null;
}

export interface ResolvedModel {
  model: CatalogModel;
  provider: ProviderRecord;
}

export interface Catalog {
  /** Every record, explicit and auto, hidden ones and those of disabled providers included. */
  all(): readonly CatalogModel[];
  get(id: string): CatalogModel | undefined;
  /** Models a client may name: sorted by ID, none hidden, none of a disabled or internal provider. */
  discoverable(): readonly CatalogModel[];
  /** A direct ID first, then an alias; null for anything not routable. */
  resolve(name: string): ResolvedModel | null;
  /** The model an alias belongs to, hidden or not. */
  aliasOwner(alias: string): string | undefined;
  provider(id: string): ProviderRecord | undefined;
}

function routable(model: CatalogModel, provider: ProviderRecord | undefined): provider is ProviderRecord {
  return provider !== undefined && provider.enabled && !KINDS[provider.kind].internal && !model.hidden && model.families.length > 0;
}

export function buildCatalog(
  providers: readonly ProviderRecord[],
  records: readonly ModelRecord[],
  listings: ReadonlyMap<string, ModelListCache>,
): Catalog {
  const providersById = new Map(providers.map((p) => [p.id, p]));
  const byId = new Map<string, CatalogModel>();
  const aliases = new Map<string, string>();

  for (const r of records) {
    const listed = listings.get(r.providerId)?.models.find((m) => m.upstreamModelId === r.upstreamModelId);
    byId.set(r.id, {
      id: r.id,
      providerId: r.providerId,
      upstreamModelId: r.upstreamModelId,
      displayName: r.displayName,
      families: [...r.families],
      aliases: [...r.aliases],
      hidden: r.hidden,
      source: 'explicit',
      contextWindow: r.contextWindow,
      // Records priced before cache writes had a price lack the field.
      pricing: r.pricing === null ? null : { ...r.pricing, cacheWritePerMTok: r.pricing.cacheWritePerMTok ?? null, cacheWrite1hPerMTok: r.pricing.cacheWrite1hPerMTok ?? null },
      acceleration: r.acceleration,
      created: listed?.created ?? Math.floor(r.createdAt / 1000),
    });
    for (const alias of r.aliases) aliases.set(alias, r.id);
  }

  for (const p of providers) {
    if (!p.enabled || !p.autoProxyModels) continue;
    for (const m of listings.get(p.id)?.models ?? []) {
      // A provider may list any string; the catalog holds IDs a client can name and a path can carry.
      if (m.upstreamModelId.length > UPSTREAM_MODEL_ID_MAX) continue;
      const id = directModelId(p.id, m.upstreamModelId);
      if (byId.has(id)) continue; // an explicit record of the same ID wins
      byId.set(id, {
        id,
        providerId: p.id,
        upstreamModelId: m.upstreamModelId,
        displayName: m.displayName ?? m.upstreamModelId,
        families: [...m.families],
        aliases: [],
        hidden: false,
        source: 'auto',
        contextWindow: m.contextWindow,
        pricing: null,
        acceleration: null,
        created: m.created,
      });
    }
  }

  const all = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const discoverable = all.filter((m) => routable(m, providersById.get(m.providerId)));

  return {
    all: () => all,
    get: (id) => byId.get(id),
    discoverable: () => discoverable,
    resolve(name) {
      const model = byId.get(name) ?? byId.get(aliases.get(name) ?? '');
      if (!model) return null;
      const provider = providersById.get(model.providerId);
      return routable(model, provider) ? { model, provider } : null;
    },
    aliasOwner: (alias) => aliases.get(alias),
    provider: (id) => providersById.get(id),
  };
}
