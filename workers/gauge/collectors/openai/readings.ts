import type { GaugeReading, GaugeWindow } from '../../../../protocol/gauge.ts';
import { malformed, monthStart, nextDay, nextMonth, dayStart, usageWindow } from '../hosted-shape.ts';
import { PROVIDER, type CostBucket, type UsageBucket } from './parse.ts';

// One reading: token and request windows for the UTC month and day (the report has no ceilings, so limit and
// remaining stay null), and the month's provider-reported spend.

function totals(buckets: UsageBucket[], from: number): { input: number; output: number; requests: number } {
  const sum = { input: 0, output: 0, requests: 0 };
  for (const bucket of buckets) {
    if (bucket.startTime < from) continue;
    sum.input += bucket.inputTokens;
    sum.output += bucket.outputTokens;
    sum.requests += bucket.requests;
  }
  return sum;
}

function windowsFor(period: 'month' | '1d', sum: ReturnType<typeof totals>, resetsAt: Date): GaugeWindow[] {
  const suffix = period === 'month' ? 'month' : 'day';
  const used = (value: number) => ({ used: value, limit: null, remaining: null });
  return [
    usageWindow(`tokens.${suffix}`, 'tokens', period, used(sum.input + sum.output), resetsAt),
    usageWindow(`input_tokens.${suffix}`, 'input_tokens', period, used(sum.input), resetsAt),
    usageWindow(`output_tokens.${suffix}`, 'output_tokens', period, used(sum.output), resetsAt),
    usageWindow(`requests.${suffix}`, 'requests', period, used(sum.requests), resetsAt),
  ];
}

/** Costs in more than one currency cannot be summed into one figure; the reference only ever shows usd. */
function spendOf(costs: CostBucket[], from: number): { amount: number; currency: string } {
  let amount = 0;
  let seen: string | null = null;
  for (const cost of costs) {
    if (cost.startTime < from) continue;
    if (seen !== null && cost.currency !== seen) throw malformed(PROVIDER, 'mixed currencies');
    seen = cost.currency;
    amount += cost.amount;
  }
  // Sums of binary fractions drift (0.1 + 0.2); a cent-fraction precision is what the reports carry.
  return { amount: Math.round(amount * 1e6) / 1e6, currency: seen ?? 'USD' };
}

export function toReading(accountId: string, now: Date, usage: UsageBucket[], costs: CostBucket[]): GaugeReading {
  const month = monthStart(now);
  const fromMonth = month.getTime() / 1000;
  const fromDay = dayStart(now).getTime() / 1000;
  const spend = spendOf(costs, fromMonth);
  return {
    accountId,
    providerId: 'openai',
    collectedAt: now.toISOString(),
    source: 'polled',
    confidence: 'high',
    windows: [
      ...windowsFor('month', totals(usage, fromMonth), nextMonth(now)),
      ...windowsFor('1d', totals(usage, fromDay), nextDay(now)),
    ],
    spend: {
      providerReported: spend.amount,
      estimated: null,
      currency: spend.currency,
      periodStart: month.toISOString(),
      periodEnd: nextMonth(now).toISOString(),
    },
    credits: null,
  };
}
