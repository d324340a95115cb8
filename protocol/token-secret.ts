import { createHash, randomBytes } from 'node:crypto';
import { TOKEN_PREFIX, TOKEN_SHAPE } from './http/tokens.ts';

// A local token's secret: how one is made, stored (as its hash) and shown (as its prefix).

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
