import { ServiceError } from './errors.ts';
import { KINDS, type ProviderKind } from './providers.ts';
import type { ModelAcceleration, ModelPricing, ModelView } from './http/catalog.ts';
import type { EndpointFamily } from './families.ts';
import type { ProviderTimeouts } from './http/providers.ts';
import type { ProviderTarget } from './messages.ts';

// The resolved catalog as its readers see it (state/catalog-index.ts builds it): providers and models, plain data
// behind read methods, so a copy can live on whichever thread reads it.

export interface ProviderRecord {
  id: string;
  kind: ProviderKind;
  displayName: string;
  baseUrl: string | null;
  enabled: boolean;
  autoProxyModels: boolean;
  /** Its keys, 0 to CREDENTIALS_MAX, in the order added (docs/api.md, Provider credentials). */
  credentials: CredentialRecord[];
  hints: Record<string, string>;
  timeouts: ProviderTimeouts;
  createdAt: number;
  updatedAt: number;
}

/** One key of a provider: a vault reference with what is shown of it. */
export interface CredentialRecord {
  /** CREDENTIAL_ID_PREFIX + a ULID-style ID (protocol/ids.ts newId). */
  id: string;
  /** 1..64 characters shown in lists and logs (no secret), e.g. "work account". */
  label: string;
  /** 1..100, default 1: its share of the calls when keys have equal headroom. */
  weight: number;
  enabled: boolean;
  /** Opaque vault reference; never leaves the store and the edge's own memory. */
  ref: string;
  /** Set when the upstream refused the key (401/403): the key is set aside until it is edited (any PATCH clears it). */
  rejectedAt: number | null;
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
  /** llama-server's parallel slots as its last model list read them; null when unknown (slot affinity off). */
  slotsOf(providerId: string): number | null;
}

/** The keys a call may use: enabled and not set aside by the upstream, in the order added. */
export function usableCredentials(provider: Pick<ProviderRecord, 'credentials'>): CredentialRecord[] {
  return provider.credentials.filter((c) => c.enabled && c.rejectedAt === null);
}

/** A hosted kind without a usable stored credential cannot be called; decided from the record, not the vault. */
export function checkCredential({ provider }: Pick<ResolvedModel, 'provider'>): void {
  if (KINDS[provider.kind].credential !== 'required') return;
  const { credentials } = provider;
  // A loop, not usableCredentials: this runs on every call to a hosted provider and should allocate nothing.
  let rejected = 0;
  let disabled = 0;
  for (const c of credentials) {
    if (!c.enabled) disabled++;
    else if (c.rejectedAt !== null) rejected++;
    else return;
  }
  const why =
    credentials.length === 0
      ? `has no credential; add one with POST /v1/providers/${provider.id}/credentials`
      : `has no usable credential (${rejected} refused by the provider, ${disabled} disabled); add, enable or ` +
        `edit one at /v1/providers/${provider.id}/credentials`;
  throw new ServiceError('PROVIDER_CREDENTIAL_MISSING', `Provider \`${provider.id}\` ${why}.`, {
    details: { providerId: provider.id, credentials: credentials.length, rejected, disabled },
  });
}

/** Where a call to a provider goes, as the workers read it: the record without its credential reference. */
export function targetOf(r: ProviderRecord): ProviderTarget {
  return { id: r.id, kind: r.kind, baseUrl: r.baseUrl ?? '', hints: r.hints, timeouts: r.timeouts };
}
