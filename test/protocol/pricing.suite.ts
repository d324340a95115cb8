import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelPricing } from '../../protocol/http/catalog.ts';
import { estimateCostUsd } from '../../protocol/pricing.ts';

// Figures computed by hand: USD = tokens x price per million / 1e6. Cached and cache-write tokens are parts of
// inputTokens (the proxy's collectors normalise both protocols that way), so each prompt token has one price.

const PRICE: ModelPricing = {
  inputPerMTok: 3,
  outputPerMTok: 15,
  cachedInputPerMTok: 0.3,
  cacheWritePerMTok: 3.75,
  cacheWrite1hPerMTok: 6,
  currency: 'USD',
};
const tokens = (
  inputTokens: number | null,
  outputTokens: number | null,
  cachedInputTokens: number | null = null,
  cacheWriteTokens: number | null = null,
) => ({
  inputTokens,
  outputTokens,
  cachedInputTokens,
  cacheWriteTokens,
});
const close = (actual: number | null, expected: number) => {
  assert.ok(actual !== null && Math.abs(actual - expected) < 1e-12, `${actual} != ${expected}`);
};

describe('estimateCostUsd', () => {
  it('prices plain input and output', () => {
    // 1000 x 3 + 500 x 15 = 10,500 micro-dollars.
    close(estimateCostUsd(tokens(1000, 500), PRICE), 0.0105);
  });

  it('styleA: cached tokens are a part of prompt_tokens, priced once at the cached rate', () => {
    // 1000 in of which 800 cached: 200 x 3 + 800 x 0.3 + 100 x 15 = 600 + 240 + 1500 = 2340.
    close(estimateCostUsd(tokens(1000, 100, 800), PRICE), 0.00234);
  });

  it('styleB: input_tokens 31 + cache_creation 3 + cache_read 8 arrive as 42 in, 8 cached, 3 written', () => {
    // 31 x 3 + 8 x 0.3 + 3 x 3.75 + 17 x 15 = 93 + 2.4 + 11.25 + 255 = 361.65.
    close(estimateCostUsd(tokens(42, 17, 8, 3), PRICE), 0.00036165);
  });

  it(
    'styleB: of 300 cache writes, 200 written for one hour are priced at the 1-hour rate, the other 100 at the ' +
      '5-minute one',
    () => {
      // 1000 in: 400 cached, 300 written (200 of them for 1 hour), 300 plain; 50 out.
      // 300 x 3 + 400 x 0.3 + 100 x 3.75 + 200 x 6 + 50 x 15 = 900 + 120 + 375 + 1200 + 750 = 3345.
      close(estimateCostUsd({ ...tokens(1000, 50, 400, 300), cacheWrite1hTokens: 200 }, PRICE), 0.003345);
      // More 1-hour writes than writes are clamped to the writes: 300 x 6 instead of 100 x 3.75 + 200 x 6.
      close(
        estimateCostUsd({ ...tokens(1000, 50, 400, 300), cacheWrite1hTokens: 900 }, PRICE),
        (900 + 120 + 1800 + 750) / 1e6,
      );
      // No 1-hour price: those writes are plain input.
      close(
        estimateCostUsd(
          { ...tokens(1000, 50, 400, 300), cacheWrite1hTokens: 200 },
          { ...PRICE, cacheWrite1hPerMTok: null },
        ),
        (900 + 120 + 375 + 600 + 750) / 1e6,
      );
    },
  );

  it('a cache price that is not set prices those tokens as plain input, never free', () => {
    const plain: ModelPricing = {
      ...PRICE,
      cachedInputPerMTok: null,
      cacheWritePerMTok: null,
      cacheWrite1hPerMTok: null,
    };
    close(estimateCostUsd(tokens(42, 17, 8, 3), plain), (42 * 3 + 17 * 15) / 1e6);
  });

  it('more cached or written tokens than input cannot make the uncached rest negative', () => {
    // Cached is cut to the 10 input tokens: 10 x 0.3 = 3; nothing is left to write or to price plainly.
    close(estimateCostUsd(tokens(10, 0, 50, 50), PRICE), 3 / 1e6);
  });

  it('no USD price, or no token reported, gives no estimate', () => {
    assert.equal(estimateCostUsd(tokens(1000, 500), null), null);
    assert.equal(estimateCostUsd(tokens(1000, 500), { ...PRICE, currency: 'EUR' }), null);
    assert.equal(estimateCostUsd(tokens(null, null), PRICE), null);
    close(estimateCostUsd(tokens(null, 10), PRICE), 150 / 1e6);
  });
});
