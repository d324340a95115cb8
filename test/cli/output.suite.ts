import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pricedBy, usageCost } from '../../cli/output.ts';
import type { UsagePricingSource } from '../../protocol/http/usage.ts';
import type { PricingSource } from '../../protocol/pricing.ts';

// How `switchyard usage` words a cost and what priced its estimated part; the dashboard's usage view words the
// sources the same way (dashboard/format.js).

const source = (name: PricingSource | null, unreportedCalls: number): UsagePricingSource => ({
  source: name,
  calls: unreportedCalls + 1,
  unreportedCalls,
  estimatedCostUsd: 0.01,
});

describe('usage cost wording', () => {
  test('names the sources of the estimated part of costUsd, never of estimates of calls billed', () => {
    const row = {
      costUsd: 0.0123,
      costEstimated: true,
      pricingSources: [source('catalog', 2), source('genai-prices@0.1.8', 1)],
    };
    assert.equal(usageCost(row), '$0.0123 (estimated: catalog + genai-prices@0.1.8)');
    // The database priced only calls that reported their cost: the estimated part is the catalog's.
    const billed = { ...row, pricingSources: [source('catalog', 1), source('genai-prices@0.1.8', 0)] };
    assert.equal(usageCost(billed), '$0.0123 (estimated: catalog)');
  });

  test('says "estimated" alone where no source is known, and nothing more for a bill or no price', () => {
    assert.equal(
      usageCost({ costUsd: 2, costEstimated: true, pricingSources: [source(null, 3)] }),
      '$2.00 (estimated)',
    );
    assert.equal(usageCost({ costUsd: 2, costEstimated: true }), '$2.00 (estimated)', 'a service without the field');
    const bill = { costUsd: 0.5, costEstimated: false, pricingSources: [source('genai-prices@0.1.8', 0)] };
    assert.equal(usageCost(bill), '$0.5000');
    assert.equal(usageCost({ costUsd: null, costEstimated: false, pricingSources: [] }), 'no price');
  });

  test('the dashboard names the same sources', async () => {
    const { pricedBy: dashboardPricedBy } = await import('../../dashboard/format.js');
    for (const pricingSources of [
      [],
      [source(null, 1)],
      [source('catalog', 1), source('genai-prices@0.1.8', 0), source(null, 2)],
      [source('catalog', 1), source('genai-prices@0.1.8', 4)],
    ]) {
      assert.equal(dashboardPricedBy({ pricingSources }), pricedBy({ pricingSources }), JSON.stringify(pricingSources));
    }
    assert.equal(dashboardPricedBy({ pricingSources: [source('catalog', 1)] }), 'catalog');
  });
});
