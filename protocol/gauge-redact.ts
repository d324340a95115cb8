import { createHash } from 'node:crypto';
import { redactSecrets } from './redact.ts';

// Gauge keeps only redacted text: email local parts go (`ada@example.com` -> `@example.com`), anything shaped
// like a key goes, and provider-side identities are kept only as hashes.

const EMAIL = /[^\s@<>()[\]"',;:]+@([A-Za-z0-9.-]+\.[A-Za-z]{2,})/g;

/** A label or free text as Gauge may store and show it, cut to `max` characters. */
export function redactText(text: string, max = 200): string {
  return redactSecrets(text.replace(EMAIL, '@$1')).slice(0, max);
}

/** A short, stable reference to a local account for diagnostics: enough to correlate, nothing to look up. */
export function accountRef(accountId: string): string {
  return 'ref_' + createHash('sha256').update(`gauge-account:${accountId}`).digest('hex').slice(0, 16);
}

/** A provider-side identity (org ID, email) as stored: salted per installation, never the identity. */
export function identityHash(identity: string, salt: string): string {
  return createHash('sha256').update(`${salt}:${identity}`).digest('hex');
}
