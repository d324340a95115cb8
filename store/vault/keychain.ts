import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { newId } from '../../protocol/ids.ts';
import { createOnce, ensureDataDir, readOptional } from './private-files.ts';
import type { Vault } from './types.ts';
import { REF_PREFIX, VaultError, assertStorableSecret, isVaultRef, readOnlyError } from './types.ts';

// The OS keychain through keytar (libsecret's Secret Service on Linux). This is the only file that loads keytar.
// It is an optional dependency with a native module, so it is required lazily and may be missing.

export const KEYCHAIN_SERVICE = 'switchyard';
const PROBE_SERVICE = 'switchyard-probe';
export const PROBE_TIMEOUT_MS = 2_000;
// Past the probe a call should take milliseconds; this only stops a keyring that locked itself since (and now
// waits on an unlock prompt nobody sees) from hanging a request forever.
const CALL_TIMEOUT_MS = 10_000;
export const INSTALLATION_FILE = 'vault.id';
const INSTALLATION_SHAPE = /^[0-9a-f]{32}$/;

interface Keytar {
  getPassword(service: string, account: string): Promise<string | null>;
  setPassword(service: string, account: string, password: string): Promise<void>;
  deletePassword(service: string, account: string): Promise<boolean>;
  findCredentials(service: string): Promise<Array<{ account: string; password: string }>>;
}

/** The items of the `switchyard` service; nothing else in the vault sees keytar. */
export interface Keychain {
  get(account: string): Promise<string | null>;
  set(account: string, secret: string): Promise<void>;
  remove(account: string): Promise<void>;
  accounts(): Promise<string[]>;
}

export type KeychainStatus = { available: true; keychain: Keychain } | { available: false; reason: string };

/** 'read' checks that a Secret Service answers; 'write' also stores, reads back and removes a probe item. */
export type KeychainAccess = 'read' | 'write';

function loadKeytar(): Keytar | null {
  try {
    const mod: unknown = createRequire(import.meta.url)('keytar');
    const candidate = mod as Partial<Record<keyof Keytar, unknown>> | null;
    const complete =
      typeof candidate?.getPassword === 'function' &&
      typeof candidate.setPassword === 'function' &&
      typeof candidate.deletePassword === 'function' &&
      typeof candidate.findCredentials === 'function';
    return complete ? (mod as Keytar) : null;
  } catch {
    return null;
  }
}

type Outcome<T> = { state: 'ok'; value: T } | { state: 'failed' } | { state: 'timeout' };

// A keytar call cannot be cancelled: after a timeout it still settles later, so it is always observed here and
// never becomes an unhandled rejection.
async function within<T>(call: Promise<T>, ms: number): Promise<Outcome<T>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Outcome<T>>((resolve) => {
    timer = setTimeout(() => resolve({ state: 'timeout' }), ms);
    timer.unref();
  });
  const settled = call.then(
    (value): Outcome<T> => ({ state: 'ok', value }),
    (): Outcome<T> => ({ state: 'failed' }),
  );
  try {
    return await Promise.race([settled, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function wrap(keytar: Keytar): Keychain {
  // keytar's messages are D-Bus diagnostics that may name accounts; only what we were doing is reported.
  async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
    const outcome = await within(run(), CALL_TIMEOUT_MS);
    if (outcome.state === 'ok') return outcome.value;
    const why = outcome.state === 'timeout' ? `no answer within ${CALL_TIMEOUT_MS / 1000} s` : 'it returned an error';
    throw new VaultError(`keychain vault: the OS keychain failed to ${what} (${why})`);
  }
  return {
    get: (account) => call('read an item', () => keytar.getPassword(KEYCHAIN_SERVICE, account)),
    set: (account, secret) => call('store an item', () => keytar.setPassword(KEYCHAIN_SERVICE, account, secret)),
    remove: async (account) =>
      void (await call('delete an item', () => keytar.deletePassword(KEYCHAIN_SERVICE, account))),
    accounts: async () =>
      (await call('list items', () => keytar.findCredentials(KEYCHAIN_SERVICE))).map((c) => c.account),
  };
}

async function probe(keytar: Keytar, access: KeychainAccess): Promise<KeychainStatus> {
  // A Secret Service without a usable default collection still answers searches and lookups; only a write
  // shows that storing works (gnome-keyring started without a login keyring fails exactly there).
  const account = `probe-${randomBytes(8).toString('hex')}`;
  const steps = async (): Promise<boolean> => {
    // A lookup of this process's own (absent) item: a search over the probe service would also read the
    // items of other processes probing at the same moment, and an item deleted between the search and the
    // read of its secret crashes libsecret under keytar (`secret_value_get_text: assertion 'value' failed`).
    await keytar.getPassword(PROBE_SERVICE, account);
    if (access === 'read') return true;
    await keytar.setPassword(PROBE_SERVICE, account, account);
    const readBack = await keytar.getPassword(PROBE_SERVICE, account);
    await keytar.deletePassword(PROBE_SERVICE, account);
    return readBack === account;
  };
  const outcome = await within(steps(), PROBE_TIMEOUT_MS);
  if (outcome.state === 'ok' && outcome.value) return { available: true, keychain: wrap(keytar) };
  if (outcome.state === 'timeout') {
    return { available: false, reason: `no Secret Service answered within ${PROBE_TIMEOUT_MS / 1000} s` };
  }
  return {
    available: false,
    reason:
      access === 'write'
        ? 'the Secret Service could not store an item (no D-Bus session, no keyring daemon, or no unlocked default ' +
          'keyring)'
        : 'no Secret Service answered (no D-Bus session or no keyring daemon)',
  };
}

// Probed once per thread and access level: a probe can cost up to the timeout, and the answer rarely changes
// while a process runs.
const probes = new Map<KeychainAccess, Promise<KeychainStatus>>();

function probeOnce(access: KeychainAccess): Promise<KeychainStatus> {
  const keytar = loadKeytar();
  if (keytar) return probe(keytar, access);
  return Promise.resolve({ available: false, reason: 'keytar is not installed or its native module did not load' });
}

export function keychainStatus(access: KeychainAccess): Promise<KeychainStatus> {
  let status = probes.get(access);
  if (!status) {
    // A keychain that can store items can read them; one that cannot may still read.
    const written = access === 'read' ? probes.get('write') : undefined;
    status = written ? written.then((known) => (known.available ? known : probeOnce('read'))) : probeOnce(access);
    probes.set(access, status);
  }
  return status;
}

/** `needed` says who needs it and why, starting with the backend's name. */
export async function requireKeychain(access: KeychainAccess, needed: string): Promise<Keychain> {
  const status = await keychainStatus(access);
  if (status.available) return status.keychain;
  throw new VaultError(`${needed}, but the OS keychain is not available: ${status.reason}`);
}

/**
 * This data directory's namespace in the keychain, so several data directories on one machine never share
 * items. Null when it does not exist yet and `create` is false.
 */
export async function installationId(dataDir: string, create: boolean): Promise<string | null> {
  const path = join(dataDir, INSTALLATION_FILE);
  const stored = await readOptional(path, 'keychain', 'the installation ID file');
  const id =
    stored !== null
      ? stored.toString('utf8').trim()
      : create
        ? await createOnce(path, randomBytes(16).toString('hex'), 'keychain', 'the installation ID file')
        : null;
  if (id !== null && !INSTALLATION_SHAPE.test(id)) {
    throw new VaultError('keychain vault: the installation ID file is damaged');
  }
  return id;
}

export function keychainAccount(installation: string, name: string): string {
  return `${installation}/${name}`;
}

export async function openKeychainVault(options: {
  dataDir: string;
  readOnly: boolean;
  keychain: Keychain;
}): Promise<Vault> {
  const { dataDir, readOnly, keychain } = options;
  if (!readOnly) await ensureDataDir(dataDir, 'keychain');
  let installation = await installationId(dataDir, !readOnly);
  const cache = new Map<string, string>();

  // A reader may open before the main thread first wrote; until the ID exists no reference can exist either.
  async function currentInstallation(): Promise<string | null> {
    installation ??= await installationId(dataDir, false);
    return installation;
  }

  async function writableInstallation(): Promise<string> {
    if (readOnly) throw readOnlyError('keychain');
    const id = await currentInstallation();
    if (id === null) throw new VaultError('keychain vault: the installation ID file is missing');
    return id;
  }

  return {
    info: { backend: 'keychain', keyStorage: null },
    async put(secret) {
      const id = await writableInstallation();
      assertStorableSecret(secret);
      const ref = newId(REF_PREFIX);
      await keychain.set(keychainAccount(id, ref), secret);
      cache.set(ref, secret);
      return ref;
    },
    async get(ref) {
      if (!isVaultRef(ref)) return null;
      const cached = cache.get(ref);
      if (cached !== undefined) return cached;
      const id = await currentInstallation();
      if (id === null) return null;
      const secret = await keychain.get(keychainAccount(id, ref));
      if (secret !== null) cache.set(ref, secret);
      return secret;
    },
    async delete(ref) {
      const id = await writableInstallation();
      if (!isVaultRef(ref)) return;
      cache.delete(ref);
      await keychain.remove(keychainAccount(id, ref));
    },
  };
}

/**
 * Removes every keychain item of this data directory (credentials and the file backend's key), for when the
 * data directory itself goes away. Returns how many items were removed.
 */
export async function purgeKeychainItems(dataDir: string): Promise<number> {
  const status = await keychainStatus('read');
  if (!status.available) return 0;
  const id = await installationId(dataDir, false);
  if (id === null) return 0;
  const mine = (await status.keychain.accounts()).filter((account) => account.startsWith(`${id}/`));
  for (const account of mine) await status.keychain.remove(account);
  return mine.length;
}
