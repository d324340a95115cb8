import type { CredentialRecord, ModelRecord, ProviderRecord } from '../../protocol/catalog.ts';
import type { EndpointFamily } from '../../protocol/families.ts';
import { DEFAULT_TIMEOUTS, type ModelListCache } from '../../protocol/providers.ts';

// Catalog inputs for unit tests of the catalog index and what reads it: an enabled OpenAI-style provider that
// lists its models, an explicit model record, and a provider's model list; each with what a test changes.

/** A usable key under vault reference `ref`. */
export const credential = (ref: string, over: Partial<CredentialRecord> = {}): CredentialRecord => ({
  id: `key_${ref}`,
  label: ref,
  weight: 1,
  enabled: true,
  ref,
  rejectedAt: null,
  createdAt: 0,
  updatedAt: 0,
  ...over,
});

export const provider = (id: string, over: Partial<ProviderRecord> = {}): ProviderRecord => ({
  id,
  kind: 'openai',
  displayName: id,
  baseUrl: 'http://127.0.0.1:1/v1',
  enabled: true,
  autoProxyModels: true,
  credentials: [],
  hints: {},
  timeouts: { ...DEFAULT_TIMEOUTS },
  createdAt: 0,
  updatedAt: 0,
  ...over,
});

export const record = (providerId: string, upstreamModelId: string, over: Partial<ModelRecord> = {}): ModelRecord => ({
  id: `${providerId}/${upstreamModelId}`,
  providerId,
  upstreamModelId,
  displayName: upstreamModelId,
  families: ['styleA.chat_completions'],
  aliases: [],
  hidden: false,
  contextWindow: null,
  pricing: null,
  acceleration: null,
  createdAt: 0,
  updatedAt: 0,
  ...over,
});

/** A model list of these upstream IDs, each serving `family`. */
export const listingOf = (
  ids: readonly string[],
  family: EndpointFamily = 'styleA.chat_completions',
): ModelListCache => ({
  fetchedAt: 1,
  error: null,
  models: ids.map((upstreamModelId) => ({
    upstreamModelId,
    displayName: null,
    created: 5,
    contextWindow: null,
    families: [family],
  })),
});
