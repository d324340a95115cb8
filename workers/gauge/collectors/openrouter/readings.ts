import type { GaugeReading, GaugeWindow } from '../../../../protocol/gauge.ts';
import { monthStart, nextDay, nextMonday, nextMonth, usageWindow } from '../hosted-shape.ts';
import type { Credits, KeyInfo, LimitReset } from './parse.ts';

// One reading: the key's credit limit (when it has one) as a spend window that resets with `limit_reset`, the
// key's spend for the UTC day, Monday week and month, the month's spend, and the account's credit balance.

const PERIOD: Record<Exclude<LimitReset, null>, string> = { daily: '1d', weekly: '7d', monthly: 'month' };

function resetOf(reset: LimitReset, now: Date): Date | null {
  if (reset === 'daily') return nextDay(now);
  if (reset === 'weekly') return nextMonday(now);
  if (reset === 'monthly') return nextMonth(now);
  return null;
}

function usageFor(key: KeyInfo): number {
  if (key.limitReset === 'daily') return key.usageDaily;
  if (key.limitReset === 'weekly') return key.usageWeekly;
  if (key.limitReset === 'monthly') return key.usageMonthly;
  return key.usage;
}

/** What counts against the limit is what the provider says is gone from it; the period's usage otherwise. */
function limitWindow(key: KeyInfo, now: Date): GaugeWindow | null {
  if (key.limit === null) return null;
  const used = key.limitRemaining !== null ? Math.max(0, key.limit - key.limitRemaining) : usageFor(key);
  return usageWindow(
    'key_limit',
    'spend',
    key.limitReset === null ? null : PERIOD[key.limitReset],
    { used: round(used), limit: key.limit, remaining: key.limitRemaining },
    resetOf(key.limitReset, now),
  );
}

const round = (usd: number) => Math.round(usd * 1e6) / 1e6;

export function toReading(accountId: string, now: Date, key: KeyInfo, credits: Credits | null): GaugeReading {
  const spent = (value: number) => ({ used: value, limit: null, remaining: null });
  const windows = [
    limitWindow(key, now),
    usageWindow('spend.day', 'spend', '1d', spent(key.usageDaily), nextDay(now)),
    usageWindow('spend.week', 'spend', '7d', spent(key.usageWeekly), nextMonday(now)),
    usageWindow('spend.month', 'spend', 'month', spent(key.usageMonthly), nextMonth(now)),
  ].filter((w): w is GaugeWindow => w !== null);
  return {
    accountId,
    providerId: 'openrouter',
    collectedAt: now.toISOString(),
    source: 'polled',
    confidence: 'high',
    windows,
    spend: {
      providerReported: key.usageMonthly,
      estimated: null,
      currency: 'USD',
      periodStart: monthStart(now).toISOString(),
      periodEnd: nextMonth(now).toISOString(),
    },
    credits:
      credits === null
        ? null
        : { remaining: round(credits.total - credits.used), total: credits.total, currency: 'USD' },
  };
}
