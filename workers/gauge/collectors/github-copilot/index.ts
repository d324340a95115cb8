import { baseUrlOf, requireCredential } from '../hosted-http.ts';
import type { Collector } from '../types.ts';
import { PROVIDER, parseUser } from './parse.ts';
import { toReading } from './readings.ts';
import { fetchUser } from './request.ts';

// GitHub Copilot with a token the user pastes (auth mode api_key): the quota snapshot of
// GET https://api.github.com/copilot_internal/user (on GitHub Enterprise, api.<host>: set baseUrl).

const DEFAULT_BASE_URL = 'https://api.github.com';

export const collector: Collector = {
  providerId: 'github-copilot',
  async collect(ctx) {
    const token = requireCredential(ctx, PROVIDER);
    const base = baseUrlOf(ctx, DEFAULT_BASE_URL, PROVIDER);
    const { json, retryAfterMs } = await fetchUser(ctx, base, token);
    const user = parseUser(json);
    return {
      readings: [toReading(ctx.accountId, ctx.now(), user)],
      ...(user.identity === null ? {} : { identity: user.identity }),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  },
};
