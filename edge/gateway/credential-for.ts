import { type CredentialRecord, type ProviderRecord, usableCredentials } from '../../protocol/catalog.ts';

// Which of a provider's keys a call uses. For now the first usable one (enabled, not refused by the provider), as
// model lists and `test` use; the key pool (W4.2 item 2) chooses by headroom, cooldown and session here.

export function credentialFor(provider: Pick<ProviderRecord, 'credentials'>): CredentialRecord | null {
  return usableCredentials(provider)[0] ?? null;
}
