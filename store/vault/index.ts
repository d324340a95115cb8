import { join } from 'node:path';
import { KEY_FILE, VAULT_FILE, openFileVault } from './file.ts';
import { INSTALLATION_FILE, keychainStatus, openKeychainVault, requireKeychain } from './keychain.ts';
import { fingerprint } from './private-files.ts';
import type { Vault, VaultBackendName } from './types.ts';
import { VaultError } from './types.ts';

// Where credentials live, hidden behind references: the OS keychain when it works, else an encrypted file.
// Records elsewhere hold only `cred_<ULID>` references; a reference is never reused for another secret, so
// every reader may cache what it resolved for as long as it runs.

export type { Vault, VaultBackendName, VaultInfo } from './types.ts';
export { VaultError } from './types.ts';
export { INSTALLATION_FILE, KEY_FILE, VAULT_FILE };

export type VaultPreference = 'auto' | 'keychain' | 'file';

export interface OpenVaultOptions {
  dataDir: string;
  /** Default: the SWITCHYARD_VAULT environment variable (auto|keychain|file), else 'auto'. */
  prefer?: VaultPreference;
  /** For worker threads: get only, and nothing is ever created on disk or in the keychain. */
  readOnly?: boolean;
}

function preferenceFromEnv(): VaultPreference {
  const value = process.env.SWITCHYARD_VAULT;
  if (value === undefined || value === '' || value === 'auto') return 'auto';
  if (value === 'keychain' || value === 'file') return value;
  throw new VaultError('SWITCHYARD_VAULT must be one of auto, keychain, file');
}

/**
 * The backend a data directory already uses, or null for a fresh one. Deciding by what is on disk keeps the
 * backend from changing under stored credentials when the keychain comes and goes, and lets worker threads
 * follow the main thread without probing. vault.enc exists from the moment a file vault is opened; vault.id
 * without it was made by the keychain backend.
 */
async function settledBackend(dataDir: string): Promise<VaultBackendName | null> {
  if ((await fingerprint(join(dataDir, VAULT_FILE), 'file', 'the encrypted vault file')) !== null) return 'file';
  if ((await fingerprint(join(dataDir, INSTALLATION_FILE), 'keychain', 'the installation ID file')) !== null) {
    return 'keychain';
  }
  return null;
}

export async function openVault(options: OpenVaultOptions): Promise<Vault> {
  const { dataDir } = options;
  const prefer = options.prefer ?? preferenceFromEnv();
  const readOnly = options.readOnly ?? false;

  const settled = prefer === 'auto' ? await settledBackend(dataDir) : null;
  // A fresh directory is decided by the write probe even for a reader, so a reader that happens to open first
  // decides as the main thread will.
  const backend: VaultBackendName =
    prefer !== 'auto' ? prefer : (settled ?? ((await keychainStatus('write')).available ? 'keychain' : 'file'));

  if (backend === 'file') {
    const vault = await openFileVault({ dataDir, readOnly });
    const status = prefer === 'auto' && settled === null ? await keychainStatus('write') : null;
    const fileReason =
      prefer === 'file'
        ? 'SWITCHYARD_VAULT=file asks for the file vault'
        : status !== null && !status.available
          ? `the OS keychain is not available: ${status.reason}`
          : 'this data directory was set up with the file vault';
    return {
      get info() {
        return { ...vault.info, fileReason };
      },
      put: (secret) => vault.put(secret),
      get: (ref) => vault.get(ref),
      delete: (ref) => vault.delete(ref),
    };
  }

  const needed =
    prefer === 'keychain'
      ? 'keychain vault: the keychain backend was asked for'
      : 'keychain vault: this data directory keeps its credentials in the OS keychain';
  const keychain = await requireKeychain(readOnly ? 'read' : 'write', needed);
  return openKeychainVault({ dataDir, readOnly, keychain });
}
