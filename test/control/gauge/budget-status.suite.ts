import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GaugeReading } from '../../../protocol/gauge.ts';
import type { GaugeBudget } from '../../../protocol/gauge-money.ts';
import { periodBounds } from '../../../protocol/periods.ts';
import { budgetStatus, type MeteredCost } from '../../../control/gauge/budget-status.ts';

// A budget's status from injected figures: which spend each basis counts, scope, thresholds and states, and
// which Gauge readings add provider-reported spend.

process.env.TZ = 'Europe/Berlin';
const NOW = Date.parse('2026-11-24T12:00:00.000Z');
const MONTH = periodBounds('month', NOW);

function budget(over: Partial<GaugeBudget> = {}): GaugeBudget {
  return {
    id: 'bud_1',
    name: 'team',
    project: null,
    scope: { providerIds: [], accountIds: [] },
    amount: 1,
    currency: 'USD',
    period: 'month',
    basis: 'estimated',
    thresholds: [50, 80, 100],
    createdAt: '2026-11-01T00:00:00.000Z',
    updatedAt: '2026-11-01T00:00:00.000Z',
    ...over,
  };
}

// OpenRouter reports what each call cost; Anthropic reports nothing, so it has only estimates.
const METERED = new Map<string, MeteredCost>([
  ['openrouter', { providerReported: 0.3, estimated: 0.25 }],
  ['anthropic', { providerReported: null, estimated: 0.4 }],
]);

function reading(
  accountId: string,
  providerReported: number,
  start: number,
  end: number,
  currency = 'USD',
): GaugeReading {
  return {
    accountId,
    providerId: 'openai',
    collectedAt: new Date(NOW).toISOString(),
    source: 'polled',
    confidence: 'high',
    windows: [],
    spend: {
      providerReported,
      estimated: null,
      currency,
      periodStart: new Date(start).toISOString(),
      periodEnd: new Date(end).toISOString(),
    },
    credits: null,
  };
}

describe('budgetStatus', () => {
  it('keeps both spends apart across two providers; basis alone decides counted', () => {
    const estimated = budgetStatus(budget(), MONTH, METERED, []);
    assert.deepEqual(estimated.spend, { providerReported: 0.3, estimated: 0.65, counted: 0.65 });
    assert.equal(estimated.remaining, 0.35);
    const reported = budgetStatus(budget({ basis: 'provider_reported' }), MONTH, METERED, []);
    assert.deepEqual(reported.spend, { providerReported: 0.3, estimated: 0.65, counted: 0.3 });
    assert.deepEqual(
      [reported.periodStart, reported.periodEnd],
      ['2026-10-31T23:00:00.000Z', '2026-11-30T23:00:00.000Z'],
    );
  });

  it('counts only the providers in scope; a spend nobody reported is null and counts as 0', () => {
    const s = budgetStatus(
      budget({ basis: 'provider_reported', scope: { providerIds: ['anthropic', 'gone'], accountIds: [] } }),
      MONTH,
      METERED,
      [],
    );
    assert.deepEqual(s.spend, { providerReported: null, estimated: 0.4, counted: 0 });
    assert.deepEqual([s.state, s.remaining, s.crossed], ['ok', 1, []]);
    const none = budgetStatus(budget(), MONTH, new Map(), []);
    assert.deepEqual(none.spend, { providerReported: null, estimated: null, counted: 0 });
  });

  it('lists the thresholds reached; warning below 100 percent, exceeded at and over it', () => {
    const at = (estimated: number, over: Partial<GaugeBudget> = {}) => {
      const s = budgetStatus(budget(over), MONTH, new Map([['p', { providerReported: null, estimated }]]), []);
      return [s.state, s.crossed, s.remaining];
    };
    assert.deepEqual(at(0.49), ['ok', [], 0.51]);
    assert.deepEqual(at(0.5), ['warning', [50], 0.5]);
    assert.deepEqual(at(1), ['exceeded', [50, 80, 100], 0]);
    assert.deepEqual(at(1.5), ['exceeded', [50, 80, 100], -0.5]);
    // 0.088 of 0.11 is exactly 80 percent, although in binary 0.088 * 100 < 80 * 0.11.
    assert.deepEqual(at(0.088, { amount: 0.11 }).slice(0, 2), ['warning', [50, 80]]);
    // Exceeded does not need a 100 threshold; one above 100 is crossed only when reached.
    assert.deepEqual(at(1.2, { thresholds: [150] }).slice(0, 2), ['exceeded', []]);
    assert.deepEqual(at(1.5, { thresholds: [90, 150] }).slice(0, 2), ['exceeded', [90, 150]]);
  });

  it('adds a scoped account reading only when its period is exactly the budget period, in its currency', () => {
    const utcMonth = [Date.parse('2026-11-01T00:00:00.000Z'), Date.parse('2026-12-01T00:00:00.000Z')] as const;
    const readings = [
      reading('acct_a', 2, MONTH.start, MONTH.end),
      reading('acct_b', 5, utcMonth[0], utcMonth[1]),
      reading('acct_c', 7, MONTH.start, MONTH.end, 'EUR'),
      reading('acct_other', 11, MONTH.start, MONTH.end),
    ];
    const b = budget({
      basis: 'provider_reported',
      scope: { providerIds: ['openrouter'], accountIds: ['acct_a', 'acct_b', 'acct_c'] },
    });
    const s = budgetStatus(b, MONTH, METERED, readings);
    assert.deepEqual(s.spend, { providerReported: 2.3, estimated: 0.25, counted: 2.3 });
    assert.equal(s.state, 'exceeded');
    // A day budget is never matched by a monthly reading.
    const day = budgetStatus({ ...b, period: 'day' }, periodBounds('day', NOW), METERED, readings);
    assert.equal(day.spend.providerReported, 0.3);
  });
});
