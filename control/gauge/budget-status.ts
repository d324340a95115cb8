import type { GaugeReading } from '../../protocol/gauge.ts';
import type { GaugeBudget, GaugeBudgetStatus } from '../../protocol/gauge-money.ts';
import type { PeriodBounds } from '../../protocol/periods.ts';

// A budget's status from figures already gathered: pure, so the arithmetic is tested without a store.
//
// - estimated: the meter's catalog-price estimates of the calls of the providers in scope in the period.
// - providerReported: the cost those calls reported themselves, plus, for each Gauge account named in scope,
//   the provider-reported spend of its latest reading when that reading's period is exactly the budget's
//   period (a provider's UTC month is not a local month: counting it would mix periods, so it is left out).
// - counted: the figure `basis` names, nothing else; a figure nobody reported (null) counts as 0.

/** Metered cost of one gateway provider in a period, as the usage views report it. */
export interface MeteredCost {
  providerReported: number | null;
  estimated: number | null;
}

const round = (x: number) => Math.round(x * 1e9) / 1e9;
const plus = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : a + b);
const usable = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;

/** The provider-reported spend of a reading when it covers exactly `bounds` in `currency`; null otherwise. */
export function readingSpend(reading: GaugeReading, bounds: PeriodBounds, currency: string): number | null {
  const s = reading.spend;
  if (s === null || s.currency !== currency || !usable(s.providerReported)) return null;
  if (s.periodStart === null || s.periodEnd === null) return null;
  return Date.parse(s.periodStart) === bounds.start && Date.parse(s.periodEnd) === bounds.end
    ? s.providerReported
    : null;
}

export function budgetStatus(
  budget: GaugeBudget,
  bounds: PeriodBounds,
  metered: ReadonlyMap<string, MeteredCost>,
  readings: readonly GaugeReading[],
): GaugeBudgetStatus {
  let providerReported: number | null = null;
  let estimated: number | null = null;
  const providers = budget.scope.providerIds.length === 0 ? [...metered.keys()] : budget.scope.providerIds;
  for (const id of providers) {
    const m = metered.get(id);
    if (m === undefined) continue;
    providerReported = plus(providerReported, m.providerReported);
    estimated = plus(estimated, m.estimated);
  }
  if (budget.scope.accountIds.length > 0) {
    const accounts = new Set(budget.scope.accountIds);
    for (const r of readings)
      if (accounts.has(r.accountId))
        providerReported = plus(providerReported, readingSpend(r, bounds, budget.currency));
  }
  providerReported = providerReported === null ? null : round(providerReported);
  estimated = estimated === null ? null : round(estimated);
  const counted = (budget.basis === 'provider_reported' ? providerReported : estimated) ?? 0;
  // 100 * counted >= t * amount, both rounded as the spend figures are: 0.088 of 0.11 is 80%, although in binary
  // 0.088 * 100 is a hair below 80 * 0.11.
  const crossed = budget.thresholds.filter((t) => round(counted * 100) >= round(t * budget.amount));
  const state = counted >= budget.amount ? 'exceeded' : crossed.length > 0 ? 'warning' : 'ok';
  return {
    ...budget,
    scope: { providerIds: [...budget.scope.providerIds], accountIds: [...budget.scope.accountIds] },
    thresholds: [...budget.thresholds],
    spend: { providerReported, estimated, counted },
    remaining: round(budget.amount - counted),
    state,
    periodStart: new Date(bounds.start).toISOString(),
    periodEnd: new Date(bounds.end).toISOString(),
    crossed,
  };
}
