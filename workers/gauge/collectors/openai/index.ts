import { baseUrlOf, requireCredential } from '../hosted-http.ts';
import { monthStart } from '../hosted-shape.ts';
import type { Collector } from '../types.ts';
import { PROVIDER } from './parse.ts';
import { toReading } from './readings.ts';
import { fetchReports } from './request.ts';

// OpenAI with an Admin key: GET /v1/organization/usage/completions and GET /v1/organization/costs.

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

export const collector: Collector = {
  providerId: 'openai',
  async collect(ctx) {
    const adminKey = requireCredential(ctx, PROVIDER);
    const base = baseUrlOf(ctx, DEFAULT_BASE_URL, PROVIDER);
    const now = ctx.now();
    const { usage, costs, retryAfterMs } = await fetchReports(ctx, base, adminKey, monthStart(now));
    return {
      readings: [toReading(ctx.accountId, now, usage, costs)],
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  },
};
