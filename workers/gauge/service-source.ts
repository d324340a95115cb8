import type { GaugeReading, GaugeWindow } from '../../protocol/gauge.ts';
import type { UsageCounters } from '../../protocol/http/usage.ts';
import { localDayOf } from '../../protocol/local-day.ts';
import { ESTIMATE_CURRENCY } from '../../protocol/pricing.ts';
import type { UsageRepo } from '../../store/usage-repo.ts';
import type { Collector } from './collectors/types.ts';

// The built-in `service` source: the service's own metered usage, read from the usage aggregates the meter
// writes, as one reading with today's and this month's token windows and the month's spend, both as the
// providers reported it and as the meter estimated it (metered tokens times the catalog price each call had
// when it was metered, protocol/pricing.ts; only calls of models with a USD price).

export interface ServiceSourceDeps {
  usage: UsageRepo;
}

function tokenWindow(id: string, period: string, c: UsageCounters, resetsAt: string): GaugeWindow {
  return { id, kind: 'tokens', period, used: c.totalTokens, limit: null, remaining: null, utilization: null, resetsAt };
}

export function serviceCollector(deps: ServiceSourceDeps): Collector {
  return {
    providerId: 'service',
    async collect(ctx) {
      const now = ctx.now();
      const today = localDayOf(now.getTime());
      const monthStart = `${today.slice(0, 8)}01`;
      const day = deps.usage.summary({ from: today, to: today }).totals;
      const month = deps.usage.summary({ from: monthStart, to: today }).totals;
      const tomorrow = new Date(now.getFullYear(), now.getMonth(), now.getDate() + 1).toISOString();
      const nextMonth = new Date(now.getFullYear(), now.getMonth() + 1, 1).toISOString();

      const reading: GaugeReading = {
        accountId: ctx.accountId,
        providerId: 'service',
        collectedAt: now.toISOString(),
        source: 'estimate',
        confidence: 'high',
        windows: [
          {
            id: 'requests-day',
            kind: 'requests',
            period: '1d',
            used: day.requests,
            limit: null,
            remaining: null,
            utilization: null,
            resetsAt: tomorrow,
          },
          tokenWindow('tokens-day', '1d', day, tomorrow),
          tokenWindow('tokens-month', 'month', month, nextMonth),
        ],
        spend: {
          providerReported: month.providerReportedCostUsd,
          estimated: month.estimatedCostUsd,
          currency: ESTIMATE_CURRENCY,
          periodStart: new Date(now.getFullYear(), now.getMonth(), 1).toISOString(),
          periodEnd: nextMonth,
        },
        credits: null,
      };
      return { readings: [reading] };
    },
  };
}
