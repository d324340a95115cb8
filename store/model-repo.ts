import type { EndpointFamily } from '../protocol/families.ts';
import type { ModelAcceleration, ModelPricing } from '../protocol/http/catalog.ts';
import type { UpstreamModel } from '../protocol/providers.ts';
import type { StoreEnv } from './env.ts';

/** An explicit catalog record, keyed by its direct ID `<providerId>/<upstreamModelId>`. */
export interface ModelRecord {
  id: string;
  providerId: string;
  upstreamModelId: string;
  displayName: string;
  families: EndpointFamily[];
  aliases: string[];
  hidden: boolean;
  contextWindow: number | null;
  pricing: ModelPricing | null;
  acceleration: ModelAcceleration | null;
  createdAt: number;
  updatedAt: number;
}

/** The last model list a provider reported, and the last failure to get one. */
export interface ModelListCache {
  fetchedAt: number | null;
  models: UpstreamModel[];
  error: { code: string; message: string; at: number } | null;
}

export interface ModelRepo {
  all(): ModelRecord[];
  stagePut(record: ModelRecord): void;
  stageRemove(id: string): void;
  listing(providerId: string): ModelListCache | undefined;
  allListings(): Map<string, ModelListCache>;
  stageListing(providerId: string, cache: ModelListCache | null): void;
}

export function modelRepo(env: StoreEnv): ModelRepo {
  const db = env.db<ModelRecord>('models');
  const listings = env.db<ModelListCache>('provider-models');
  return {
    all: () => [...db.getRange().map(({ value }) => value)],
    stagePut: (record) => void db.put(record.id, record),
    stageRemove: (id) => void db.remove(id),
    listing: (providerId) => listings.get(providerId),
    allListings: () => new Map([...listings.getRange().map(({ key, value }) => [key, value] as const)]),
    stageListing: (providerId, cache) => void (cache === null ? listings.remove(providerId) : listings.put(providerId, cache)),
  };
}
