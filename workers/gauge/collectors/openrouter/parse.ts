import { count, malformed, record } from '../hosted-shape.ts';

// OpenRouter (openrouter.ai/docs/api/api-reference): `GET /api/v1/key` → `{data: {label, limit, limit_remaining,
// limit_reset, include_byok_in_limit, usage, usage_daily, usage_weekly, usage_monthly, byok_usage…, is_free_tier,
// …}}`, amounts in USD, days and months in UTC, weeks from Monday; `GET /api/v1/credits` (management keys only)
// → `{data: {total_credits, total_usage}}`. The key's label (a masked key) is not kept; the
// creator ID only travels as the collection's `identity`.

export const PROVIDER = 'OpenRouter';

export type LimitReset = 'daily' | 'weekly' | 'monthly' | null;

export interface KeyInfo {
  limit: number | null;
  limitRemaining: number | null;
  /** null when the limit never resets, or the reset is one this collector does not know. */
  limitReset: LimitReset;
  usage: number;
  usageDaily: number;
  usageWeekly: number;
  usageMonthly: number;
  /** The key's creator (`creator_user_id`): handed to the actor as the identity, which it stores hashed only. */
  identity: string | null;
}

export interface Credits {
  total: number;
  used: number;
}

const RESETS: ReadonlySet<string> = new Set(['daily', 'weekly', 'monthly']);

/** A provider-side identity, bounded; an absent or odd one is simply not reported. */
export function identityOf(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 && value.length <= 200 ? value : null;
}

export function parseKey(json: unknown): KeyInfo {
  const data = record(record(json, PROVIDER, 'body').data, PROVIDER, 'data');
  const reset = data.limit_reset;
  if (reset !== undefined && reset !== null && typeof reset !== 'string') throw malformed(PROVIDER, 'limit_reset');
  return {
    limit: count(data.limit, PROVIDER, 'limit', { nullable: true }),
    // A key can overspend its limit before the check catches up: remaining may go below zero.
    limitRemaining: count(data.limit_remaining, PROVIDER, 'limit_remaining', { nullable: true, signed: true }),
    limitReset: typeof reset === 'string' && RESETS.has(reset) ? (reset as LimitReset) : null,
    usage: count(data.usage, PROVIDER, 'usage') as number,
    usageDaily: count(data.usage_daily, PROVIDER, 'usage_daily', { nullable: true }) ?? 0,
    usageWeekly: count(data.usage_weekly, PROVIDER, 'usage_weekly', { nullable: true }) ?? 0,
    usageMonthly: count(data.usage_monthly, PROVIDER, 'usage_monthly', { nullable: true }) ?? 0,
    identity: identityOf(data.creator_user_id),
  };
}

export function parseCredits(json: unknown): Credits {
  const data = record(record(json, PROVIDER, 'body').data, PROVIDER, 'data');
  return {
    total: count(data.total_credits, PROVIDER, 'total_credits') as number,
    used: count(data.total_usage, PROVIDER, 'total_usage') as number,
  };
}
