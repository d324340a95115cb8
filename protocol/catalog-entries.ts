import { KINDS, type UpstreamModel } from './providers.ts';
import type { CatalogModel, ModelRecord, ProviderRecord } from './catalog.ts';
import { directModelId, UPSTREAM_MODEL_ID_MAX } from './http/catalog.ts';

// The resolved catalog: the main thread's read-mostly view of providers and models, which resolution and
// discovery read. Built whole from the store at start, then kept up to date entry by entry as writes commit
// (state/catalog-index.ts). The rules of what one entry is live here, for both ways.

export type { Catalog, CatalogModel, ResolvedModel } from './catalog.ts';

export function routable(model: CatalogModel, provider: ProviderRecord | undefined): provider is ProviderRecord {
  return (
    provider !== undefined &&
    provider.enabled &&
    !KINDS[provider.kind].internal &&
    !model.hidden &&
    model.families.length > 0
  );
}

export const byModelId = (a: CatalogModel, b: CatalogModel): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** An explicit record's entry; `listed` is the provider's report of the same upstream ID, when it made one. */
export function explicitEntry(r: ModelRecord, listed: UpstreamModel | undefined): CatalogModel {
  return {
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
    pricing:
      r.pricing === null
        ? null
        : {
            ...r.pricing,
            cacheWritePerMTok: r.pricing.cacheWritePerMTok ?? null,
            cacheWrite1hPerMTok: r.pricing.cacheWrite1hPerMTok ?? null,
          },
    acceleration: r.acceleration,
    created: listed?.created ?? Math.floor(r.createdAt / 1000),
  };
}

/** Whether a provider's listed models join the catalog at all. */
export const listsAutoModels = (p: ProviderRecord): boolean => p.enabled && p.autoProxyModels;

/**
 * The auto entry of a listed model, or null for an ID a client could not name (an explicit record wins over it
 * elsewhere).
 */
export function autoEntry(p: ProviderRecord, m: UpstreamModel): CatalogModel | null {
  // A provider may list any string; the catalog holds IDs a client can name and a path can carry.
  if (m.upstreamModelId.length > UPSTREAM_MODEL_ID_MAX) return null;
  return {
    id: directModelId(p.id, m.upstreamModelId),
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
  };
}
