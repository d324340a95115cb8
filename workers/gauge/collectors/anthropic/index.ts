import { baseUrlOf, requireCredential } from '../hosted-http.ts';
import { monthStart } from '../hosted-shape.ts';
import type { Collector } from '../types.ts';
import { PROVIDER } from './parse.ts';
import { toReading } from './readings.ts';
import { fetchReports } from './request.ts';

// Anthropic with an Admin API key (sk-ant-admin…): usage and cost (analytics API, legacy reports on 404) and
// the organization's rate limits.

const DEFAULT_BASE_URL = 'https://api.anthropic.com';

export const collector: Collector = {
  providerId: 'anthropic',
  async collect(ctx) {
    const adminKey = requireCredential(ctx, PROVIDER);
    const base = baseUrlOf(ctx, DEFAULT_BASE_URL, PROVIDER);
    const now = ctx.now();
    const reports = await fetchReports(ctx, base, adminKey, monthStart(now));
    return { readings: [toReading(ctx.accountId, now, reports)] };
  },
};
