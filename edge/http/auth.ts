export { displayPrefix, generateTokenSecret, tokenHash } from '../../protocol/token-secret.ts';

// The three token carriers (docs/api.md, Conventions), in this order of precedence; the first one present is the
// one used, so `Authorization: Basic ...` beside a valid x-api-key is refused, not passed over. Only the
// local token travels in them; it is never forwarded upstream.
export function extractToken(headers: Readonly<Record<string, string>>): string | undefined {
  const authorization = headers['authorization'];
  if (authorization !== undefined) {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    // Present but not a Bearer credential: an empty token, which no token matches.
    return m ? m[1] : '';
  }
  const service = headers['x-service-token']?.trim();
  if (service) return service;
  const apiKey = headers['x-api-key']?.trim();
  if (apiKey) return apiKey;
  return undefined;
}
