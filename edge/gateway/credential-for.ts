import type { CredentialRecord, ProviderRecord } from '../../protocol/catalog.ts';

// A provider's keys as a call sees them (docs/api.md, Key pools): with one usable key the call takes it, with
// several the key pool chooses (key-pool.ts). Loops, not `usableCredentials`: this runs on every call and should
// allocate nothing.

const usable = (c: CredentialRecord) => c.enabled && c.rejectedAt === null;

/** The first usable key (enabled, not refused by the provider), as model lists and `test` use; null for none. */
export function credentialFor(provider: Pick<ProviderRecord, 'credentials'>): CredentialRecord | null {
  for (const c of provider.credentials) if (usable(c)) return c;
  return null;
}

/**
 * Whether the provider has more than one enabled key: then the key pool chooses. A key refused by the provider
 * counts, so that the pool, which sets a refused key aside on every thread at once, keeps deciding while the
 * refusal reaches the records: a call right after one key of two was refused does not try it again.
 */
export function pooled(provider: Pick<ProviderRecord, 'credentials'>): boolean {
  let n = 0;
  for (const c of provider.credentials) if (c.enabled && ++n > 1) return true;
  return false;
}
