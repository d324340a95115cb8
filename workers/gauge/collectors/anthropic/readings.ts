import type { GaugeReading, GaugeWindow, GaugeWindowKind } from '../../../../protocol/gauge.ts';
import { dayStart, malformed, monthStart, nextDay, nextMonth, usageWindow } from '../hosted-shape.ts';
import { PROVIDER, type Ceiling, type CostRow, type UsageRow } from './parse.ts';
import type { AnthropicReports } from './request.ts';

// One reading: token (and, from the analytics API, request) windows for the UTC month and day, the
// organization's Messages API ceilings as limit-only windows, and the month's provider-reported spend.

/** Limiter types as the rate-limits reference names them, e.g. `requests_per_minute`. */
const LIMITER = /^(requests|input_tokens|output_tokens|tokens)_per_(minute|hour|day)$/;
const PERIOD: Record<string, string> = { minute: '1m', hour: '1h', day: '1d' };

function usageWindows(rows: UsageRow[], from: number, period: 'month' | '1d', resetsAt: Date): GaugeWindow[] {
  const suffix = period === 'month' ? 'month' : 'day';
  let input = 0;
  let output = 0;
  let requests: number | null = null;
  for (const row of rows) {
    if (row.start < from) continue;
    input += row.input;
    output += row.output;
    if (row.requests !== null) requests = (requests ?? 0) + row.requests;
  }
  const used = (value: number) => ({ used: value, limit: null, remaining: null });
  const windows = [
    usageWindow(`tokens.${suffix}`, 'tokens', period, used(input + output), resetsAt),
    usageWindow(`input_tokens.${suffix}`, 'input_tokens', period, used(input), resetsAt),
    usageWindow(`output_tokens.${suffix}`, 'output_tokens', period, used(output), resetsAt),
  ];
  if (requests !== null) windows.push(usageWindow(`requests.${suffix}`, 'requests', period, used(requests), resetsAt));
  return windows;
}

/** Ceilings only: the API states the configured limit, not what is left of it (live headers do that). */
function ceilingWindows(ceilings: Ceiling[]): GaugeWindow[] {
  const seen = new Set<string>();
  const windows: GaugeWindow[] = [];
  for (const ceiling of ceilings) {
    const match = LIMITER.exec(ceiling.type);
    if (match === null) continue;
    const id = `limit.${ceiling.group}.${ceiling.type}`;
    if (seen.has(id)) continue;
    seen.add(id);
    windows.push(
      usageWindow(
        id,
        match[1] as GaugeWindowKind,
        PERIOD[match[2] as string] ?? null,
        { used: null, limit: ceiling.value, remaining: null },
        null,
      ),
    );
  }
  return windows;
}

function spendOf(costs: CostRow[], from: number): { amount: number; currency: string } {
  let amount = 0;
  let seen: string | null = null;
  for (const cost of costs) {
    if (cost.start < from) continue;
    if (seen !== null && cost.currency !== seen) throw malformed(PROVIDER, 'mixed currencies');
    seen = cost.currency;
    amount += cost.amount;
  }
  return { amount: Math.round(amount * 1e6) / 1e6, currency: seen ?? 'USD' };
}

export function toReading(accountId: string, now: Date, reports: AnthropicReports): GaugeReading {
  const month = monthStart(now);
  const spend = spendOf(reports.costs, month.getTime());
  return {
    accountId,
    providerId: 'anthropic',
    collectedAt: now.toISOString(),
    source: 'polled',
    confidence: 'high',
    windows: [
      ...usageWindows(reports.usage, month.getTime(), 'month', nextMonth(now)),
      ...usageWindows(reports.usage, dayStart(now).getTime(), '1d', nextDay(now)),
      ...ceilingWindows(reports.ceilings),
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
