import { randomBytes } from 'node:crypto';
import { mkdir, link, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { threadId } from 'node:worker_threads';
import type { VaultBackendName } from './types.ts';
import { VaultError } from './types.ts';

// Owner-only files in the data directory. Node's fs errors carry the full path in their message, so every one
// is replaced here by a VaultError that keeps only the errno code.

export function ioError(backend: VaultBackendName, what: string, err: unknown): VaultError {
  if (err instanceof VaultError) return err;
  const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : 'unknown error';
  return new VaultError(`${backend} vault: cannot ${what} (${code})`);
}

function isNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && 'code' in err && err.code === 'ENOENT';
}

export async function ensureDataDir(dir: string, backend: VaultBackendName): Promise<void> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw ioError(backend, 'create the data directory', err);
  }
}

/** The file's bytes, or null when it does not exist. */
export async function readOptional(path: string, backend: VaultBackendName, what: string): Promise<Buffer | null> {
  try {
    return await readFile(path);
  } catch (err) {
    if (isNotFound(err)) return null;
    throw ioError(backend, `read ${what}`, err);
  }
}

type StatLike = { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint };

// Atomic replacement gives every version of a file a new inode, and in-place edits change size or times.
function print(s: StatLike): string {
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
}

/** Changes whenever the file is replaced or rewritten; null when it does not exist. */
export async function fingerprint(path: string, backend: VaultBackendName, what: string): Promise<string | null> {
  try {
    return print(await stat(path, { bigint: true }));
  } catch (err) {
    if (isNotFound(err)) return null;
    throw ioError(backend, `read ${what}`, err);
  }
}

/** The bytes and the fingerprint of that very version of the file (one handle for both); null when absent. */
export async function readVersion(
  path: string,
  backend: VaultBackendName,
  what: string,
): Promise<{ data: Buffer; fingerprint: string } | null> {
  try {
    const handle = await open(path, 'r');
    try {
      const version = print(await handle.stat({ bigint: true }));
      return { data: await handle.readFile(), fingerprint: version };
    } finally {
      await handle.close();
    }
  } catch (err) {
    if (isNotFound(err)) return null;
    throw ioError(backend, `read ${what}`, err);
  }
}

async function syncDir(dir: string): Promise<void> {
  // Makes the rename or link itself durable; some platforms refuse to open a directory, which only loses that.
  const handle = await open(dir, 'r').catch(() => null);
  if (!handle) return;
  try {
    await handle.sync();
  } catch {
    // Directory fsync is unsupported on some filesystems; the data itself was already synced.
  } finally {
    await handle.close();
  }
}

async function writeTemp(path: string, data: string | Buffer): Promise<string> {
  // Unique per process and thread, and created exclusively (0600 from the first byte), so concurrent writers
  // never share a temp file and nobody else can open it in between.
  const tmp = `${path}.${process.pid}-${threadId}-${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  return tmp;
}

/** Replaces the file atomically: readers see the old bytes or the new, never a mix. */
export async function writeAtomic(
  path: string,
  data: string | Buffer,
  backend: VaultBackendName,
  what: string,
): Promise<void> {
  let tmp: string | null = null;
  try {
    tmp = await writeTemp(path, data);
    await rename(tmp, path);
    tmp = null;
    await syncDir(dirname(path));
  } catch (err) {
    if (tmp) await rm(tmp, { force: true }).catch(() => undefined);
    throw ioError(backend, `write ${what}`, err);
  }
}

/**
 * Creates the file holding `value` unless it exists, and returns the value the file holds afterwards, so two
 * threads or processes racing to create it agree on one (link() fails when the name is taken; rename would not).
 */
export async function createOnce(
  path: string,
  value: string,
  backend: VaultBackendName,
  what: string,
): Promise<string> {
  let tmp: string | null = null;
  try {
    tmp = await writeTemp(path, `${value}\n`);
    try {
      await link(tmp, path);
      await syncDir(dirname(path));
      return value;
    } catch (err) {
      if (!(typeof err === 'object' && err !== null && 'code' in err && err.code === 'EEXIST')) throw err;
      return (await readFile(path, 'utf8')).trim();
    }
  } catch (err) {
    throw ioError(backend, `create ${what}`, err);
  } finally {
    if (tmp) await rm(tmp, { force: true }).catch(() => undefined);
  }
}
