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

/** Whether the provider has more than one usable key: then the key pool chooses. */
export function pooled(provider: Pick<ProviderRecord, 'credentials'>): boolean {
  let n = 0;
  for (const c of provider.credentials) if (usable(c) && ++n > 1) return true;
  return false;
}
