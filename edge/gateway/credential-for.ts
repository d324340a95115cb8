import type { CredentialRecord, ProviderRecord } from '../../protocol/catalog.ts';

// Which of a provider's keys a call uses. For now the first usable one (enabled, not refused by the provider:
// usableCredentials' first, found without building the list on every call), as model lists and `test` use; the
// key pool (W4.2 item 2) chooses by headroom, cooldown and session here.

export function credentialFor(provider: Pick<ProviderRecord, 'credentials'>): CredentialRecord | null {
  return provider.credentials.find((c) => c.enabled && c.rejectedAt === null) ?? null;
}
