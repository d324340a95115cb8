import { endpoint, getJson } from '../hosted-http.ts';
import { eachPage } from '../hosted-shape.ts';
import type { CollectContext } from '../types.ts';
import {
  PROVIDER,
  parseAnalyticsCost,
  parseAnalyticsUsage,
  parseLegacyCost,
  parseLegacyUsage,
  parseRateLimits,
  type Ceiling,
  type CostRow,
  type Page,
  type UsageRow,
} from './parse.ts';

// The newer Usage and Cost Analytics API first (beta header); a 404 on its first page means the organization
// or deployment does not serve it, and the legacy report answers instead. The rate-limits endpoint is read
// for ceilings; where it is absent (404) there are none to show.

const VERSION = '2023-06-01';
const ANALYTICS_BETA = 'analytics-usage-cost-2026-08-24';
const MAX_PAGES = 40;

export interface AnthropicReports {
  usage: UsageRow[];
  costs: CostRow[];
  ceilings: Ceiling[];
  /** Which API answered (the analytics API, or the legacy reports after its 404). */
  api: 'analytics' | 'legacy';
}

interface Source<T> {
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  parse: (json: unknown) => Page<T>;
}

/** Every page of one report, or null when its first page is a 404 and `optional` allows that. */
async function pages<T>(ctx: CollectContext, base: string, source: Source<T>, optional: boolean): Promise<T[] | null> {
  const rows: T[] = [];
  let missing = false;
  await eachPage(PROVIDER, MAX_PAGES, async (page) => {
    const url = endpoint(base, source.path, { ...source.query, page: page ?? undefined });
    const answer = await getJson(ctx, PROVIDER, url, source.headers, {
      passStatuses: optional && page === null ? [404] : [],
    });
    if (answer.status === 404) {
      missing = true;
      return null;
    }
    const { rows: found, next } = source.parse(answer.json);
    rows.push(...found);
    return next;
  });
  return missing ? null : rows;
}

export async function fetchReports(
  ctx: CollectContext,
  base: string,
  adminKey: string,
  since: Date,
): Promise<AnthropicReports> {
  const headers = { 'x-api-key': adminKey, 'anthropic-version': VERSION };
  const beta = { ...headers, 'anthropic-beta': ANALYTICS_BETA };
  const startingAt = since.toISOString();
  const analytics = { starting_at: startingAt, time_bucket_width: '1d' };
  const legacy = { starting_at: startingAt, bucket_width: '1d', limit: '31' };

  let api: AnthropicReports['api'] = 'analytics';
  let usage = await pages(
    ctx,
    base,
    { path: '/v1/organizations/analytics/usage', query: analytics, headers: beta, parse: parseAnalyticsUsage },
    true,
  );
  if (usage === null) {
    api = 'legacy';
    usage = await pages(
      ctx,
      base,
      { path: '/v1/organizations/usage_report/messages', query: legacy, headers, parse: parseLegacyUsage },
      false,
    );
  }
  let costs = await pages(
    ctx,
    base,
    { path: '/v1/organizations/analytics/cost', query: analytics, headers: beta, parse: parseAnalyticsCost },
    true,
  );
  if (costs === null) {
    api = 'legacy';
    costs = await pages(
      ctx,
      base,
      { path: '/v1/organizations/cost_report', query: legacy, headers, parse: parseLegacyCost },
      false,
    );
  }
  const ceilings = await pages(
    ctx,
    base,
    { path: '/v1/organizations/rate_limits', query: {}, headers, parse: parseRateLimits },
    true,
  );
  return { usage: usage ?? [], costs: costs ?? [], ceilings: ceilings ?? [], api };
}
