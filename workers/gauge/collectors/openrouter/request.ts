import { endpoint, getJson } from '../hosted-http.ts';
import type { CollectContext } from '../types.ts';
import { PROVIDER, parseCredits, parseKey, type Credits, type KeyInfo } from './parse.ts';

// The key first (any key may read it); then the account's credits, which only a management key may read: an
// inference key's 403 there leaves credits unknown and the collection stands.

export interface OpenRouterAnswers {
  key: KeyInfo;
  credits: Credits | null;
  retryAfterMs: number | undefined;
}

export async function fetchAnswers(ctx: CollectContext, base: string, apiKey: string): Promise<OpenRouterAnswers> {
  const headers = { authorization: `Bearer ${apiKey}` };
  const keyAnswer = await getJson(ctx, PROVIDER, endpoint(base, '/key'), headers);
  const key = parseKey(keyAnswer.json);
  const creditsAnswer = await getJson(ctx, PROVIDER, endpoint(base, '/credits'), headers, { passStatuses: [403] });
  const credits = creditsAnswer.status === 200 ? parseCredits(creditsAnswer.json) : null;
  return { key, credits, retryAfterMs: keyAnswer.retryAfterMs ?? creditsAnswer.retryAfterMs };
}
