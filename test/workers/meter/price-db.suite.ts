import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { ModelPricing } from '../../../protocol/http/catalog.ts';
import { PRICE_DATABASE, resolvePricing } from '../../../state/price-index.ts';
import { estimateCostUsd } from '../../../protocol/pricing.ts';
import { createPriceDatabase } from '../../../workers/meter/price-db.ts';

// The pinned price database itself, offline: what it prices (figures from its 0.1.8 data, which a version
// bump may change: update them with the pin) and what it leaves unpriced.

const db = createPriceDatabase();
const close = (actual: number | null, expected: number) =>
  assert.ok(actual !== null && Math.abs(actual - expected) < 1e-12, `${actual} != ${expected}`);
const hosted = (kind: 'openai' | 'anthropic' | 'openrouter') => ({ kind, baseUrl: null });

describe('the price database', () => {
  it('is the version package.json pins and node_modules holds', () => {
    const root = new URL('../../../', import.meta.url);
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
    const installed = JSON.parse(
      readFileSync(new URL('node_modules/@pydantic/genai-prices/package.json', root), 'utf8'),
    );
    assert.equal(PRICE_DATABASE, `genai-prices@${installed.version}`);
    assert.equal(pkg.dependencies['@pydantic/genai-prices'], installed.version, 'pinned exactly, no range');
  });

  it('prices an OpenAI model by its upstream ID, cached input at its own rate', () => {
    const { pricing, source } = resolvePricing({ pricing: null, upstreamModelId: 'gpt-4o-mini' }, hosted('openai'), db);
    assert.equal(source, PRICE_DATABASE);
    assert.deepEqual(pricing, {
      inputPerMTok: 0.15,
      outputPerMTok: 0.6,
      cachedInputPerMTok: 0.075,
      cacheWritePerMTok: null,
      cacheWrite1hPerMTok: null,
      currency: 'USD',
    });
    // 1000 prompt tokens of which 400 cached, 100 out: 600 x 0.15 + 400 x 0.075 + 100 x 0.6 = 180 micro-USD.
    close(estimateCostUsd({ inputTokens: 1000, outputTokens: 100, cachedInputTokens: 400 }, pricing), 180e-6);
  });

  it('prices an Anthropic model with cache reads and writes (a dated ID too)', () => {
    const { pricing } = resolvePricing(
      { pricing: null, upstreamModelId: 'claude-3-5-sonnet-20241022' },
      hosted('anthropic'),
      db,
    );
    assert.ok(pricing);
    assert.deepEqual(
      [pricing.inputPerMTok, pricing.outputPerMTok, pricing.cachedInputPerMTok, pricing.cacheWritePerMTok],
      [3, 15, 0.3, 3.75],
    );
    assert.equal(pricing.cacheWrite1hPerMTok, 6);
    // 10,000 prompt tokens: 6,000 read from cache, 2,000 written (500 for an hour), 2,000 plain; 1,000 out.
    // 2000 x 3 + 6000 x 0.3 + 1500 x 3.75 + 500 x 6 + 1000 x 15 = 31,425 micro-USD.
    const tokens = {
      inputTokens: 10_000,
      outputTokens: 1_000,
      cachedInputTokens: 6_000,
      cacheWriteTokens: 2_000,
      cacheWrite1hTokens: 500,
    };
    close(estimateCostUsd(tokens, pricing), 0.031425);
  });

  it('prices an OpenRouter model by its vendor/model ID', () => {
    const { pricing } = resolvePricing(
      { pricing: null, upstreamModelId: 'anthropic/claude-sonnet-4' },
      hosted('openrouter'),
      db,
    );
    assert.equal(pricing?.inputPerMTok, 3);
  });

  it('prices an openai_compatible provider whose base URL is a known API', () => {
    const groq = { kind: 'openai_compatible' as const, baseUrl: 'https://api.groq.com/openai/v1' };
    const { pricing, source } = resolvePricing({ pricing: null, upstreamModelId: 'llama-3.3-70b-versatile' }, groq, db);
    assert.equal(source, PRICE_DATABASE);
    assert.ok(pricing !== null && pricing.inputPerMTok > 0);
  });

  it('leaves an unknown model and local runtimes unpriced', () => {
    const unknown = resolvePricing({ pricing: null, upstreamModelId: 'no-such-model-xyz' }, hosted('openai'), db);
    assert.deepEqual(unknown, { pricing: null, source: null });
    for (const kind of ['ollama', 'llamacpp', 'embedded'] as const) {
      const local = resolvePricing(
        { pricing: null, upstreamModelId: 'gpt-4o-mini' },
        { kind, baseUrl: 'http://127.0.0.1:11434' },
        db,
      );
      assert.deepEqual(local, { pricing: null, source: null });
    }
    // A loopback OpenAI-compatible server matches no provider's API URL.
    const loopback = { kind: 'openai_compatible' as const, baseUrl: 'http://127.0.0.1:8080/v1' };
    assert.equal(resolvePricing({ pricing: null, upstreamModelId: 'gpt-4o-mini' }, loopback, db).pricing, null);
  });

  it('gives way to the catalog price', () => {
    const own: ModelPricing = {
      inputPerMTok: 1,
      outputPerMTok: 2,
      cachedInputPerMTok: null,
      cacheWritePerMTok: null,
      cacheWrite1hPerMTok: null,
      currency: 'USD',
    };
    assert.deepEqual(resolvePricing({ pricing: own, upstreamModelId: 'gpt-4o-mini' }, hosted('openai'), db), {
      pricing: own,
      source: 'catalog',
    });
  });
});
