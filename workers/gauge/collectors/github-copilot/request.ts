import { endpoint, getJson } from '../hosted-http.ts';
import { CollectorError, type CollectContext } from '../types.ts';
import { PROVIDER } from './parse.ts';

// One GET. The service says who it is (no editor's identity is borrowed). GitHub answers 404 rather than 403
// to a valid token that may not read Copilot entitlements (a token of an app without access, a classic token
// of an account without Copilot): that is a credential problem the user fixes, so it reads as auth_failed.

const API_VERSION = '2025-04-01';

export async function fetchUser(
  ctx: CollectContext,
  base: string,
  token: string,
): Promise<{ json: unknown; retryAfterMs: number | undefined }> {
  const headers = {
    authorization: `token ${token}`,
    'x-github-api-version': API_VERSION,
    'user-agent': 'switchyard-gauge',
  };
  const answer = await getJson(ctx, PROVIDER, endpoint(base, '/copilot_internal/user'), headers, {
    passStatuses: [404],
  });
  if (answer.status === 404) {
    throw new CollectorError(
      'auth_failed',
      `${PROVIDER} does not show quota to this token (HTTP 404); a fine-grained token with the "Plan: read-only" ` +
        `permission can read it.`,
      {
        upstreamStatus: 404,
      },
    );
  }
  return { json: answer.json, retryAfterMs: answer.retryAfterMs };
}
