import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelPricing } from '../../protocol/http/catalog.ts';
import { createPriceIndex, pricingFromDatabase, resolvePricing, type PriceQuery } from '../../state/price-index.ts';

// The index over a price database, with a fake database: which query each kind asks, that each model is asked
// once, and the catalog's own price winning.

const asked: string[] = [];
const DB: Record<string, Record<string, Record<string, unknown>>> = {
  openai: { 'gpt-4o-mini': { input_mtok: 0.15, cache_read_mtok: 0.075, output_mtok: 0.6 } },
  anthropic: {
    'claude-x': {
      input_mtok: { base: 3, tiers: [{ start: 200_000, price: 6 }] },
      output_mtok: 15,
      cache_read_mtok: 0.3,
      cache_write_mtok: 3.75,
      cache_write_1h_mtok: 6,
    },
  },
  'url:https://api.example.test/v1': { 'm-1': { input_mtok: 1, output_mtok: 2 } },
};
const lookup = (q: PriceQuery, id: string) => {
  const key = q.providerId ?? `url:${q.providerApiUrl}`;
  asked.push(`${key} ${id}`);
  return DB[key]?.[id] ?? null;
};

describe('pricingFromDatabase', () => {
  it('takes numbers, the base of tiered prices, and leaves missing cache prices null', () => {
    assert.deepEqual(pricingFromDatabase(DB.anthropic!['claude-x']!), {
      inputPerMTok: 3,
      outputPerMTok: 15,
      cachedInputPerMTok: 0.3,
      cacheWritePerMTok: 3.75,
      cacheWrite1hPerMTok: 6,
      currency: 'USD',
    });
    assert.equal(pricingFromDatabase({ input_mtok: 0.02 })?.outputPerMTok, 0);
    assert.equal(pricingFromDatabase({ input_mtok: 1 })?.cacheWritePerMTok, null);
  });
  it('is null without a text input price', () => {
    assert.equal(pricingFromDatabase(null), null);
    assert.equal(pricingFromDatabase({ requests_kcount: 5 }), null);
    assert.equal(pricingFromDatabase({ input_mtok: -1, output_mtok: 1 }), null);
    assert.equal(pricingFromDatabase({ input_mtok: 'x' }), null);
  });
});

describe('createPriceIndex', () => {
  it('asks by kind, or by base URL for openai_compatible, and asks each model once', () => {
    asked.length = 0;
    const index = createPriceIndex('db@1.0.0', lookup);
    assert.equal(index.priceOf('openai', null, 'gpt-4o-mini')?.inputPerMTok, 0.15);
    assert.equal(index.priceOf('openai', 'https://other.test', 'gpt-4o-mini')?.cachedInputPerMTok, 0.075);
    assert.equal(index.priceOf('openai_compatible', 'https://api.example.test/v1', 'm-1')?.outputPerMTok, 2);
    assert.equal(index.priceOf('openai', null, 'nope'), null);
    assert.equal(index.priceOf('openai', null, 'nope'), null);
    assert.deepEqual(asked, ['openai gpt-4o-mini', 'url:https://api.example.test/v1 m-1', 'openai nope']);
  });
  it('never prices local runtimes, nor an openai_compatible provider without a base URL', () => {
    asked.length = 0;
    const index = createPriceIndex('db@1.0.0', lookup);
    for (const kind of ['ollama', 'llamacpp', 'embedded'] as const) {
      assert.equal(index.priceOf(kind, 'http://127.0.0.1:1234', 'gpt-4o-mini'), null);
    }
    assert.equal(index.priceOf('openai_compatible', null, 'gpt-4o-mini'), null);
    assert.deepEqual(asked, []);
  });
  it('prices nothing when the database throws', () => {
    const index = createPriceIndex('db@1.0.0', () => {
      throw new Error('bad entry');
    });
    assert.equal(index.priceOf('anthropic', null, 'claude-x'), null);
  });
});

describe('resolvePricing', () => {
  const index = createPriceIndex('db@1.0.0', lookup);
  const own: ModelPricing = {
    inputPerMTok: 9,
    outputPerMTok: 9,
    cachedInputPerMTok: null,
    cacheWritePerMTok: null,
    cacheWrite1hPerMTok: null,
    currency: 'USD',
  };
  const openai = { kind: 'openai' as const, baseUrl: null };
  it('prefers the catalog price, then the database, else none', () => {
    assert.deepEqual(resolvePricing({ pricing: own, upstreamModelId: 'gpt-4o-mini' }, openai, index), {
      pricing: own,
      source: 'catalog',
    });
    const db = resolvePricing({ pricing: null, upstreamModelId: 'gpt-4o-mini' }, openai, index);
    assert.equal(db.source, 'db@1.0.0');
    assert.equal(db.pricing?.inputPerMTok, 0.15);
    assert.deepEqual(resolvePricing({ pricing: null, upstreamModelId: 'unknown' }, openai, index), {
      pricing: null,
      source: null,
    });
    assert.deepEqual(resolvePricing({ pricing: null, upstreamModelId: 'gpt-4o-mini' }, undefined, index), {
      pricing: null,
      source: null,
    });
  });
});
