import type { CatalogModel } from '../protocol/catalog.ts';
import type { ModelCreate, ModelUpdate } from '../protocol/http/catalog.ts';
import type { ModelRecord } from '../store/model-repo.ts';

// The catalog model records a create and an update write (control/catalog-service.ts).

export function newModelRecord(
  input: ModelCreate,
  id: string,
  providerId: string,
  auto: CatalogModel | undefined,
  families: readonly ModelRecord['families'][number][],
): ModelRecord {
  const now = Date.now();
  return {
    id,
    providerId,
    upstreamModelId: input.upstreamModelId,
    displayName: input.displayName ?? auto?.displayName ?? input.upstreamModelId,
    families: [...families],
    aliases: input.aliases ?? [],
    hidden: input.hidden ?? false,
    contextWindow: input.contextWindow ?? auto?.contextWindow ?? null,
    pricing: input.pricing
      ? {
          cachedInputPerMTok: null,
          cacheWritePerMTok: null,
          cacheWrite1hPerMTok: null,
          currency: 'USD',
          ...input.pricing,
        }
      : null,
    acceleration: input.acceleration ? { draftModelId: null, ...input.acceleration } : null,
    createdAt: now,
    updatedAt: now,
  };
}

/** Patching an auto model turns it into an explicit record (to hide it, alias it, price it). */
export function patchedModelRecord(
  id: string,
  current: CatalogModel,
  stored: ModelRecord | undefined,
  patch: ModelUpdate,
): ModelRecord {
  const base: ModelRecord = stored ?? {
    id,
    providerId: current.providerId,
    upstreamModelId: current.upstreamModelId,
    displayName: current.displayName,
    families: [...current.families],
    aliases: [],
    hidden: false,
    contextWindow: current.contextWindow,
    pricing: null,
    acceleration: null,
    createdAt: Date.now(),
    updatedAt: Date.now(),
  };
  return {
    ...base,
    ...(patch.displayName !== undefined && { displayName: patch.displayName }),
    ...(patch.families !== undefined && { families: [...patch.families] }),
    ...(patch.aliases !== undefined && { aliases: [...patch.aliases] }),
    ...(patch.hidden !== undefined && { hidden: patch.hidden }),
    ...(patch.contextWindow !== undefined && { contextWindow: patch.contextWindow }),
    ...(patch.pricing !== undefined && {
      pricing: patch.pricing && {
        cachedInputPerMTok: null,
        cacheWritePerMTok: null,
        cacheWrite1hPerMTok: null,
        currency: 'USD',
        ...patch.pricing,
      },
    }),
    ...(patch.acceleration !== undefined && {
      acceleration: patch.acceleration && { draftModelId: null, ...patch.acceleration },
    }),
    updatedAt: Date.now(),
  };
}
