import { createHash, randomBytes } from 'node:crypto';
import { TOKEN_PREFIX, TOKEN_SHAPE } from '../../protocol/http/tokens.ts';

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

/**
 * SHA-256 of a well-formed token, or undefined for anything that cannot be one. Tokens carry 256 random
 * bits, so an unsalted hash is safe at rest, and looking the hash up in a map reveals nothing usable
 * about the secret through timing.
 */
export function tokenHash(secret: string): string | undefined {
  if (!TOKEN_SHAPE.test(secret)) return undefined;
  return createHash('sha256').update(secret).digest('hex');
}

export function generateTokenSecret(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/** The part of a secret shown in listings: the fixed prefix and four random characters. */
export function displayPrefix(secret: string): string {
  return secret.slice(0, TOKEN_PREFIX.length + 4);
}
