// Shared by the backends and re-exported by index.ts; a separate file so the backends need not import the
// module that imports them.

export type VaultBackendName = 'keychain' | 'file';

export interface VaultInfo {
  backend: VaultBackendName;
  /**
   * Where the file backend's AES key lives; null for the keychain backend, and for a read-only file vault
   * opened before the main thread created the vault file.
   */
  keyStorage: 'keychain' | 'file' | null;
  /** Why credentials are in the encrypted file rather than the OS keychain; null for the keychain backend. */
  fileReason?: string | null;
}

export interface Vault {
  readonly info: VaultInfo;
  /** Stores a secret under a new opaque reference `cred_<ULID>` and returns the reference. */
  put(secret: string): Promise<string>;
  /** The secret, or null when the reference is unknown. */
  get(ref: string): Promise<string | null>;
  /** Idempotent. */
  delete(ref: string): Promise<void>;
}

/**
 * Every error the vault throws. Messages name the backend and what failed, never a secret or a path, so they
 * are safe to log as they are.
 */
export class VaultError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VaultError';
  }
}

export const REF_PREFIX = 'cred_';

// References are minted here and nowhere else, so anything not shaped like ours is unknown without asking a
// backend (and cannot smuggle separators into a keychain account name).
const REF_SHAPE = /^cred_[0-9A-HJKMNP-TV-Z]{26}$/;

export function isVaultRef(ref: unknown): ref is string {
  return typeof ref === 'string' && REF_SHAPE.test(ref);
}

export function assertStorableSecret(secret: unknown): asserts secret is string {
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new VaultError('A credential must be a non-empty string');
  }
}

export function readOnlyError(backend: VaultBackendName): VaultError {
  return new VaultError(`${backend} vault: this vault was opened read-only`);
}
