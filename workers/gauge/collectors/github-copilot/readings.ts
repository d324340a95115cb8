import type { GaugeReading, GaugeWindow } from '../../../../protocol/gauge.ts';
import { usageWindow } from '../hosted-shape.ts';
import type { CopilotUser, Quota } from './parse.ts';

// One reading, one monthly window per quota. An unlimited quota is a window with no limit; a snapshot with
// zero entitlement and nothing remaining is a placeholder (token-billed and Business seats send them) and is
// dropped rather than shown as exhausted. Premium interactions of a credit-billed account are AI credits.

function windowOf(quota: Quota, user: CopilotUser): GaugeWindow | null {
  const kind = quota.id === 'premium_interactions' && user.creditBilled ? 'credits' : 'requests';
  if (quota.unlimited)
    return usageWindow(quota.id, kind, 'month', { used: null, limit: null, remaining: null }, user.resetsAt);
  if (!quota.entitlement && !quota.remaining) return null;
  const used =
    quota.entitlement !== null && quota.remaining !== null ? Math.max(0, quota.entitlement - quota.remaining) : null;
  const window = usageWindow(
    quota.id,
    kind,
    'month',
    { used, limit: quota.entitlement, remaining: quota.remaining },
    user.resetsAt,
  );
  if (window.utilization === null && quota.percentRemaining !== null) {
    window.utilization = Math.min(1, Math.max(0, 1 - quota.percentRemaining / 100));
  }
  return window;
}

export function toReading(accountId: string, now: Date, user: CopilotUser): GaugeReading {
  return {
    accountId,
    providerId: 'github-copilot',
    collectedAt: now.toISOString(),
    source: 'polled',
    // The endpoint is not a documented API: its figures are what GitHub's editors show, but its shape may move.
    confidence: 'medium',
    windows: user.quotas.map((q) => windowOf(q, user)).filter((w): w is GaugeWindow => w !== null),
    spend: null,
    credits: null,
  };
}
