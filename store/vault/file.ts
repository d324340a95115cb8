import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { newId } from '../../protocol/ids.ts';
import { installationId, keychainAccount, keychainStatus, requireKeychain } from './keychain.ts';
import { createOnce, ensureDataDir, fingerprint, readOptional, readVersion, writeAtomic } from './private-files.ts';
import type { Vault } from './types.ts';
import { REF_PREFIX, VaultError, assertStorableSecret, isVaultRef, readOnlyError } from './types.ts';

// The encrypted-file vault: one AES-256-GCM file in the data directory. Each entry is sealed with its own IV
// and tag and its reference as additional data, so entries cannot be swapped; a MAC over the whole file
// (HMAC-SHA256 under a key derived from the same key) also catches renamed, dropped or edited lines.
//
// vault.enc is two lines: a JSON body {v, keyStorage, keyCheck, entries: {ref: base64(iv|tag|ciphertext)}} and
// the base64 MAC of that body's exact bytes. keyStorage is read before the key is known, then authenticated.

export const VAULT_FILE = 'vault.enc';
export const KEY_FILE = 'vault.key';
const KEY_ACCOUNT = 'vault-key';
const FORMAT_VERSION = 1;
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export type KeyStorage = 'keychain' | 'file';

interface Keys {
  aes: Buffer;
  mac: Buffer;
  /** Tells a wrong key apart from a modified file. */
  check: string;
}

interface Body {
  v: typeof FORMAT_VERSION;
  keyStorage: KeyStorage;
  keyCheck: string;
  entries: Record<string, string>;
}

const TAMPERED = 'file vault: the encrypted vault file failed its integrity check (it was modified or is damaged)';
const WRONG_KEY = 'file vault: the key does not match the encrypted vault file (wrong key)';
const UNREADABLE = 'file vault: the encrypted vault file is damaged or in an unknown format';

function deriveKeys(aes: Buffer): Keys {
  const mac = Buffer.from(hkdfSync('sha256', aes, Buffer.alloc(0), 'switchyard vault file mac', 32));
  return { aes, mac, check: createHmac('sha256', mac).update('switchyard vault key check').digest('base64') };
}

function decodeKey(text: string, where: string): Keys {
  const raw = Buffer.from(text.trim(), 'base64');
  if (raw.length !== KEY_BYTES) throw new VaultError(`file vault: the vault key ${where} is damaged`);
  return deriveKeys(raw);
}

/** base64(iv | tag | ciphertext) of `secret`, bound to `ref`. */
export function sealEntry(aesKey: Buffer, ref: string, secret: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', aesKey, iv);
  cipher.setAAD(Buffer.from(ref, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
}

/** The secret sealed under `ref`; throws when the bytes, the key or the reference do not match. */
export function openEntry(aesKey: Buffer, ref: string, sealed: string): string {
  const bytes = Buffer.from(sealed, 'base64');
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new VaultError(TAMPERED);
  try {
    const decipher = createDecipheriv('aes-256-gcm', aesKey, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(ref, 'utf8'));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new VaultError('file vault: a credential failed authentication (the file was modified or the key is wrong)');
  }
}

function fileMac(keys: Keys, body: string): Buffer {
  return createHmac('sha256', keys.mac).update(body, 'utf8').digest();
}

function serialize(keys: Keys, keyStorage: KeyStorage, entries: Map<string, string>): string {
  const body: Body = { v: FORMAT_VERSION, keyStorage, keyCheck: keys.check, entries: Object.fromEntries(entries) };
  const text = JSON.stringify(body);
  return `${text}\n${fileMac(keys, text).toString('base64')}\n`;
}

function isBody(value: unknown): value is Body {
  if (typeof value !== 'object' || value === null) return false;
  const body = value as Partial<Record<keyof Body, unknown>>;
  const entries = body.entries;
  return (
    body.v === FORMAT_VERSION &&
    (body.keyStorage === 'keychain' || body.keyStorage === 'file') &&
    typeof body.keyCheck === 'string' &&
    typeof entries === 'object' &&
    entries !== null &&
    Object.entries(entries).every(([ref, sealed]) => isVaultRef(ref) && typeof sealed === 'string')
  );
}

function parse(data: Buffer): { text: string; mac: Buffer; body: Body } {
  const lines = data.toString('utf8').split('\n');
  const [text, mac, rest] = lines;
  if (lines.length !== 3 || text === undefined || mac === undefined || rest !== '') throw new VaultError(UNREADABLE);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new VaultError(UNREADABLE);
  }
  if (!isBody(body)) throw new VaultError(UNREADABLE);
  return { text, mac: Buffer.from(mac, 'base64'), body };
}

function verify(keys: Keys, parsed: { text: string; mac: Buffer; body: Body }): void {
  if (parsed.body.keyCheck !== keys.check) throw new VaultError(WRONG_KEY);
  const expected = fileMac(keys, parsed.text);
  if (parsed.mac.length !== expected.length || !timingSafeEqual(parsed.mac, expected)) throw new VaultError(TAMPERED);
}

export interface FileVaultOptions {
  dataDir: string;
  readOnly: boolean;
  /** Where a new vault keeps its key; default: the keychain when it can store items, else a key file. */
  keyStorage?: KeyStorage;
}

/** The key of an existing vault, from its key file or the OS keychain. */
async function loadKey(dataDir: string, storage: KeyStorage): Promise<Keys> {
  const keyPath = join(dataDir, KEY_FILE);
  if (storage === 'file') {
    const stored = await readOptional(keyPath, 'file', 'the vault key file');
    if (stored === null) throw new VaultError('file vault: the vault key file is missing');
    return decodeKey(stored.toString('utf8'), 'file');
  }
  const keychain = await requireKeychain('read', 'file vault: its key is kept in the OS keychain');
  const id = await installationId(dataDir, false);
  const stored = id === null ? null : await keychain.get(keychainAccount(id, KEY_ACCOUNT));
  if (stored === null) throw new VaultError('file vault: the vault key is missing from the OS keychain');
  return decodeKey(stored, 'in the OS keychain');
}

// Reuses a key left by an earlier attempt that stopped before vault.enc existed.
async function createKey(dataDir: string, storage: KeyStorage): Promise<Keys> {
  const keyPath = join(dataDir, KEY_FILE);
  const fresh = randomBytes(KEY_BYTES).toString('base64');
  if (storage === 'file') return decodeKey(await createOnce(keyPath, fresh, 'file', 'the vault key file'), 'file');
  const keychain = await requireKeychain('write', 'file vault: its key is to be kept in the OS keychain');
  const id = await installationId(dataDir, true);
  if (id === null) throw new VaultError('file vault: the installation ID file is missing');
  const account = keychainAccount(id, KEY_ACCOUNT);
  const existing = await keychain.get(account);
  if (existing !== null) return decodeKey(existing, 'in the OS keychain');
  await keychain.set(account, fresh);
  return decodeKey(fresh, 'in the OS keychain');
}

export async function openFileVault(options: FileVaultOptions): Promise<Vault> {
  const { dataDir, readOnly } = options;
  const vaultPath = join(dataDir, VAULT_FILE);

  let keys: Keys | null = null;
  let keyStorage: KeyStorage | null = null;
  let entries = new Map<string, string>();
  let version: string | null = null;
  const secrets = new Map<string, string>();

  // Brings the in-memory entries up to the file on disk, re-reading only when the file changed: the main
  // thread (or another process) may have added references since this instance last looked.
  async function refresh(): Promise<void> {
    if ((await fingerprint(vaultPath, 'file', 'the encrypted vault file')) === version) return;
    const current = await readVersion(vaultPath, 'file', 'the encrypted vault file');
    if (current === null) {
      entries = new Map();
      version = null;
      return;
    }
    const parsed = parse(current.data);
    // The key is fetched again only when the file says it changed; a mismatch after that is a wrong key.
    if (keys === null || keyStorage !== parsed.body.keyStorage || keys.check !== parsed.body.keyCheck) {
      keys = await loadKey(dataDir, parsed.body.keyStorage);
      keyStorage = parsed.body.keyStorage;
    }
    verify(keys, parsed);
    entries = new Map(Object.entries(parsed.body.entries));
    version = current.fingerprint;
  }

  // Every read of the file and every write run one at a time, so a refresh never lands between a write's
  // read-modify-write steps and no write is lost.
  let queue: Promise<unknown> = Promise.resolve();
  function serial<T>(task: () => Promise<T>): Promise<T> {
    const run = queue.then(task);
    queue = run.catch(() => undefined);
    return run;
  }

  async function write(change: (next: Map<string, string>) => void): Promise<void> {
    await refresh();
    if (keys === null || keyStorage === null) throw new VaultError('file vault: the encrypted vault file is missing');
    const next = new Map(entries);
    change(next);
    await writeAtomic(vaultPath, serialize(keys, keyStorage, next), 'file', 'the encrypted vault file');
    entries = next;
    version = await fingerprint(vaultPath, 'file', 'the encrypted vault file');
  }

  // Opening reads the file (and so finds its key) at once, so a wrong key or a damaged file shows at start-up.
  // A reader never creates anything; until the main thread has, it simply knows no references.
  if (readOnly) await serial(refresh);
  else {
    await ensureDataDir(dataDir, 'file');
    await serial(async () => {
      if ((await fingerprint(vaultPath, 'file', 'the encrypted vault file')) === null) {
        const storage = options.keyStorage ?? ((await keychainStatus('write')).available ? 'keychain' : 'file');
        const created = await createKey(dataDir, storage);
        // Two openers racing here agree on whichever file was linked first.
        await createOnce(
          vaultPath,
          serialize(created, storage, new Map()).trimEnd(),
          'file',
          'the encrypted vault file',
        );
      }
      await refresh();
    });
  }

  return {
    get info() {
      return { backend: 'file' as const, keyStorage: keyStorage ?? options.keyStorage ?? null };
    },
    async put(secret) {
      if (readOnly) throw readOnlyError('file');
      assertStorableSecret(secret);
      const ref = newId(REF_PREFIX);
      await serial(() =>
        write((next) => {
          if (keys === null) throw new VaultError('file vault: the key is not loaded');
          next.set(ref, sealEntry(keys.aes, ref, secret));
        }),
      );
      secrets.set(ref, secret);
      return ref;
    },
    async get(ref) {
      if (!isVaultRef(ref)) return null;
      const cached = secrets.get(ref);
      if (cached !== undefined) return cached;
      return serial(async () => {
        await refresh();
        const sealed = entries.get(ref);
        if (sealed === undefined || keys === null) return null;
        const secret = openEntry(keys.aes, ref, sealed);
        secrets.set(ref, secret);
        return secret;
      });
    },
    async delete(ref) {
      if (readOnly) throw readOnlyError('file');
      if (!isVaultRef(ref)) return;
      secrets.delete(ref);
      await serial(async () => {
        await refresh();
        if (entries.has(ref)) await write((next) => void next.delete(ref));
      });
    },
  };
}
