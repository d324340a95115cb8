import type { ModelPricing } from '../protocol/http/catalog.ts';
import type { ProviderKind } from '../protocol/providers.ts';
import { ESTIMATE_CURRENCY, type PricingSource } from '../protocol/pricing.ts';

// The price of a hosted model out of the box: a price database (a pinned npm package, loaded by
// workers/meter/price-db.ts) asked once per upstream model, its answer kept in a Map. A catalog model's own
// `pricing` always wins; local runtimes are never priced; a model the database does not know stays unpriced.

/**
 * Name and version of the pinned database, as the answers show them (a test holds it to the installed package's
 * version). Here rather than beside the package's loader, so the usage readers (store/) can name the database
 * without loading it: usage rows count the database's estimates but keep no version.
 */
export const PRICE_DATABASE: PricingSource = 'genai-prices@0.1.8';

/** How to ask the database: by its provider ID, or (openai_compatible) by the provider's base URL. */
export interface PriceQuery {
  providerId?: string;
  providerApiUrl?: string;
}

/** The database's prices of one model as it spells them (`input_mtok`, ...), or null when it has none. */
export type DatabaseLookup = (query: PriceQuery, upstreamModelId: string) => Record<string, unknown> | null;

export interface PriceIndex {
  /** `<name>@<version>` of the database. */
  source: PricingSource;
  /** The database's USD price of a model of a provider of `kind` at `baseUrl`; null when unknown or local. */
  priceOf(kind: ProviderKind, baseUrl: string | null, upstreamModelId: string): ModelPricing | null;
}

export interface ResolvedPricing {
  pricing: ModelPricing | null;
  source: PricingSource | null;
}

/** The database's provider per kind; openai_compatible is matched by base URL, the local kinds never. */
const DATABASE_PROVIDER: Partial<Record<ProviderKind, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  openrouter: 'openrouter',
};

/** Distinct upstream models remembered per provider before that provider's answers are forgotten and asked again. */
const MAX_REMEMBERED = 4096;

/**
 * A per-million-token price: a number, or a tiered price `{base, tiers}` (e.g. above 200k prompt tokens), of which
 * only the base is taken; anything else is no price.
 */
function perMTok(value: unknown): number | null {
  const n = typeof value === 'object' && value !== null ? (value as { base?: unknown }).base : value;
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : null;
}

/**
 * The database's prices as a catalog price: null without a text input price (models priced per image, per second
 * or per request only). No output price means output is free (embeddings); cache prices it lacks stay null, so
 * those tokens are priced as plain input (protocol/pricing.ts).
 */
export function pricingFromDatabase(prices: Record<string, unknown> | null): ModelPricing | null {
  if (prices === null) return null;
  const input = perMTok(prices.input_mtok);
  if (input === null) return null;
  return {
    inputPerMTok: input,
    outputPerMTok: perMTok(prices.output_mtok) ?? 0,
    cachedInputPerMTok: perMTok(prices.cache_read_mtok),
    cacheWritePerMTok: perMTok(prices.cache_write_mtok),
    cacheWrite1hPerMTok: perMTok(prices.cache_write_1h_mtok),
    currency: ESTIMATE_CURRENCY,
  };
}

/** An index over `lookup`: each (provider, upstream model) is asked once; later calls read a Map. */
export function createPriceIndex(source: PricingSource, lookup: DatabaseLookup): PriceIndex {
  // Keyed by the database provider (or `url:<base URL>`), then by upstream model ID: no key is built per call.
  const known = new Map<string, Map<string, ModelPricing | null>>();
  const remembered = (key: string, query: PriceQuery, upstreamModelId: string): ModelPricing | null => {
    let models = known.get(key);
    if (models === undefined) known.set(key, (models = new Map()));
    const hit = models.get(upstreamModelId);
    if (hit !== undefined) return hit;
    if (models.size >= MAX_REMEMBERED) models.clear();
    let pricing: ModelPricing | null = null;
    try {
      pricing = pricingFromDatabase(lookup(query, upstreamModelId));
    } catch {
      // A database entry it cannot read prices nothing.
    }
    models.set(upstreamModelId, pricing);
    return pricing;
  };
  return {
    source,
    priceOf(kind, baseUrl, upstreamModelId) {
      const providerId = DATABASE_PROVIDER[kind];
      if (providerId !== undefined) return remembered(providerId, { providerId }, upstreamModelId);
      if (kind !== 'openai_compatible' || baseUrl === null) return null;
      return remembered(`url:${baseUrl}`, { providerApiUrl: baseUrl }, upstreamModelId);
    },
  };
}

/**
 * The price the meter uses for a catalog model now, and its source: the record's own `pricing` when set, else the
 * database's price for its provider's kind and upstream ID, else none.
 */
export function resolvePricing(
  model: { pricing: ModelPricing | null; upstreamModelId: string },
  provider: { kind: ProviderKind; baseUrl: string | null } | undefined,
  index: PriceIndex | undefined,
): ResolvedPricing {
  if (model.pricing !== null) return { pricing: model.pricing, source: 'catalog' };
  const pricing = provider && index ? index.priceOf(provider.kind, provider.baseUrl, model.upstreamModelId) : null;
  return pricing === null ? { pricing: null, source: null } : { pricing, source: index!.source };
}
