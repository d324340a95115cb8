import { calcPrice } from '@pydantic/genai-prices';
import { createPriceIndex, PRICE_DATABASE, type PriceIndex } from '../../state/price-index.ts';

// The price database the meter falls back on when a catalog model has no `pricing`: @pydantic/genai-prices, pinned
// to an exact version in package.json and named by PRICE_DATABASE (docs/api.md, Catalog, says how to update it).
// Only the data bundled in the package is read: its update functions, which would fetch newer prices, are never
// called, so nothing is fetched at run time. Its matching (a model's `match` rules, date-suffixed IDs, fallback
// providers) is its own, asked once per upstream model (about 0.3 ms each); the index keeps the answers.

export function createPriceDatabase(): PriceIndex {
  return createPriceIndex(PRICE_DATABASE, (query, upstreamModelId) => {
    const found = calcPrice({ input_tokens: 0 }, upstreamModelId, query);
    return found === null ? null : (found.model_price as Record<string, unknown>);
  });
}
