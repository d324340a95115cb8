import { workerData } from 'node:worker_threads';
import { openVault, type Vault } from '../../store/vault/index.ts';

// Proxy workers read provider credentials from the vault themselves, so the main thread never holds a
// provider key. References never change their secret (a new credential gets a new reference), so a
// worker may cache what it read for as long as it lives.

export interface ProxyWorkerData {
  dataDir: string;
}

let vault: Promise<Vault> | undefined;
const secrets = new Map<string, string>();

/** The secret when it is known without a read (no reference, or read before); undefined when not. */
export function knownCredential(ref: string | null): string | null | undefined {
  return ref === null ? null : secrets.get(ref);
}

export async function credentialOf(ref: string | null): Promise<string | null> {
  if (ref === null) return null;
  const known = secrets.get(ref);
  if (known !== undefined) return known;
  vault ??= openVault({ dataDir: (workerData as ProxyWorkerData).dataDir, readOnly: true });
  const secret = await (await vault).get(ref);
  if (secret !== null) secrets.set(ref, secret);
  return secret;
}
