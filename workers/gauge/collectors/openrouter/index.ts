import { baseUrlOf, requireCredential } from '../hosted-http.ts';
import type { Collector } from '../types.ts';
import { PROVIDER } from './parse.ts';
import { toReading } from './readings.ts';
import { fetchAnswers } from './request.ts';

// OpenRouter with an API key (inference or management): GET /api/v1/key, and GET /api/v1/credits when the
// key may read it.

const DEFAULT_BASE_URL = 'https://openrouter.ai/api/v1';

export const collector: Collector = {
  providerId: 'openrouter',
  async collect(ctx) {
    const apiKey = requireCredential(ctx, PROVIDER);
    const base = baseUrlOf(ctx, DEFAULT_BASE_URL, PROVIDER);
    const now = ctx.now();
    const { key, credits, retryAfterMs } = await fetchAnswers(ctx, base, apiKey);
    return {
      readings: [toReading(ctx.accountId, now, key, credits)],
      ...(key.identity === null ? {} : { identity: key.identity }),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  },
};
