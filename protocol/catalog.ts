import { ServiceError } from './errors.ts';
import { KINDS, type ProviderKind } from './providers.ts';
import type { ModelAcceleration, ModelPricing, ModelView } from './http/catalog.ts';
import type { EndpointFamily } from './families.ts';
import type { ProviderTimeouts } from './http/providers.ts';
import type { ProviderTarget } from './messages.ts';

// The resolved catalog as its readers see it (catalog-index.ts builds it): providers and models, plain data
// behind read methods, so a copy can live on whichever thread reads it.

export interface ProviderRecord {
  id: string;
  kind: ProviderKind;
  displayName: string;
  baseUrl: string | null;
  enabled: boolean;
  autoProxyModels: boolean;
  /** Opaque vault reference; never leaves the store and the edge's own memory. */
  credentialRef: string | null;
  hints: Record<string, string>;
  timeouts: ProviderTimeouts;
  createdAt: number;
  updatedAt: number;
}

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
  /** Every provider record's ID, enabled or not. */
  providerIds(): string[];
}

/** A hosted kind without a stored credential cannot be called; decided from the record, not the vault. */
export function checkCredential({ provider }: Pick<ResolvedModel, 'provider'>): void {
  if (KINDS[provider.kind].credential === 'required' && provider.credentialRef === null) {
    throw new ServiceError(
      'PROVIDER_CREDENTIAL_MISSING',
      `Provider \`${provider.id}\` has no credential; set one with PATCH /v1/providers/${provider.id}.`,
      {
        details: { providerId: provider.id },
      },
    );
  }
}

/** Where a call to a provider goes, as the workers read it: the record without its credential reference. */
export function targetOf(r: ProviderRecord): ProviderTarget {
  return { id: r.id, kind: r.kind, baseUrl: r.baseUrl ?? '', hints: r.hints, timeouts: r.timeouts };
}
