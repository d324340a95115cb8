import type { ModelListCache } from '../protocol/providers.ts';
import type { ModelRecord } from '../protocol/catalog.ts';
import type { StoreEnv } from './env.ts';
import { boundedKey } from './keys.ts';

export type { ModelRecord };

/** The last model list a provider reported, and the last failure to get one. */
export type { ModelListCache };

export interface ModelRepo {
  all(): ModelRecord[];
  get(id: string): ModelRecord | undefined;
  stagePut(record: ModelRecord): void;
  stageRemove(id: string): void;
  listing(providerId: string): ModelListCache | undefined;
  allListings(): Map<string, ModelListCache>;
  stageListing(providerId: string, cache: ModelListCache | null): void;
}

// A record's ID holds an upstream model ID, which comes from a client or from a provider's list. The edge
// bounds both (MODEL_ID_MAX, 464 characters: at most 1,392 bytes); records are keyed through boundedKey
// anyway, so that no later path to this store can fail a commit with a long one (a record is read by key only
// to check it is still stored, through the same mapping). Listings are keyed by provider ID (PROVIDER_ID, 63
// characters).
export function modelRepo(env: StoreEnv): ModelRepo {
  const db = env.db<ModelRecord>('models');
  const listings = env.db<ModelListCache>('provider-models');
  return {
    all: () => [...db.getRange().map(({ value }) => value)],
    get: (id) => db.get(boundedKey(id)),
    stagePut: (record) => void db.put(boundedKey(record.id), record),
    stageRemove: (id) => void db.remove(boundedKey(id)),
    listing: (providerId) => listings.get(providerId),
    allListings: () => new Map([...listings.getRange().map(({ key, value }) => [key, value] as const)]),
    stageListing: (providerId, cache) =>
      void (cache === null ? listings.remove(providerId) : listings.put(providerId, cache)),
  };
}
