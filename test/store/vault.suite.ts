import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { newId } from '../../protocol/ids.ts';
import { KEY_FILE, VAULT_FILE, openFileVault, openEntry, sealEntry } from '../../store/vault/file.ts';
import { INSTALLATION_FILE, keychainStatus, purgeKeychainItems } from '../../store/vault/keychain.ts';
import { VaultError, openVault, type Vault, type VaultInfo } from '../../store/vault/index.ts';

// One suite, run against every backend. The keychain runs only where a Secret Service can store items; CI sets
// SWITCHYARD_REQUIRE_KEYCHAIN=1 so that a missing keychain fails there instead of skipping.

const keychain = await keychainStatus('write');
const requireKeychain = process.env.SWITCHYARD_REQUIRE_KEYCHAIN === '1';
const REF = /^cred_[0-9A-HJKMNP-TV-Z]{26}$/;

const dirs: string[] = [];
function tempDir(sub?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-vault-'));
  dirs.push(dir);
  if (sub === undefined) return dir;
  dirs.push(join(dir, sub));
  return join(dir, sub);
}
after(async () => {
  // Test items must not pile up in a developer's real login keyring.
  for (const dir of dirs) await purgeKeychainItems(dir);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

function assertNowhereOnDisk(dir: string, secret: string): void {
  const utf8 = Buffer.from(secret, 'utf8');
  const forms = [utf8, Buffer.from(utf8.toString('base64')), Buffer.from(utf8.toString('hex'))];
  const all = files(dir);
  assert.ok(all.length > 0, 'the vault wrote nothing to look at');
  for (const file of all) {
    const bytes = readFileSync(file);
    for (const form of forms) assert.equal(bytes.indexOf(form), -1, `${file} holds the secret`);
  }
}

function assertSafeError(err: unknown, dir: string, secret?: string): true {
  assert.ok(err instanceof VaultError, `not a VaultError: ${String(err)}`);
  if (secret !== undefined) assert.ok(!err.message.includes(secret), 'the error names the secret');
  assert.ok(!err.message.includes(dir), 'the error names a path');
  return true;
}

/** Resolves refs with a read-only vault opened in a real worker thread, as the proxy pool does. */
function readInWorker(dataDir: string, prefer: 'keychain' | 'file', refs: string[]): Promise<Array<string | null>> {
  // Node 20 does not hand tsx's hooks to workers, so the worker registers them before importing TypeScript.
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    import('tsx/esm/api').then(({ register }) => { register(); return import(workerData.url); })
      .then(async ({ openVault }) => {
        const vault = await openVault({ dataDir: workerData.dataDir, prefer: workerData.prefer, readOnly: true });
        parentPort.postMessage({ secrets: await Promise.all(workerData.refs.map((ref) => vault.get(ref))) });
      })
      .catch((err) => parentPort.postMessage({ error: String(err && err.message) }));`;
  const url = new URL('../../store/vault/index.ts', import.meta.url).href;
  const worker = new Worker(code, { eval: true, workerData: { url, dataDir, prefer, refs } });
  return new Promise((resolve, reject) => {
    worker.once('message', (message: { secrets?: Array<string | null>; error?: string }) => {
      void worker.terminate();
      if (message.secrets) resolve(message.secrets);
      else reject(new Error(message.error));
    });
    worker.once('error', reject);
  });
}

interface Backend {
  name: string;
  prefer: 'keychain' | 'file';
  open(dataDir: string, readOnly?: boolean): Promise<Vault>;
  info: VaultInfo;
  skip: string | false;
}

const noKeychain = keychain.available || requireKeychain ? false : `no usable OS keychain here: ${keychain.reason}`;
const backends: Backend[] = [
  {
    name: 'keychain backend',
    prefer: 'keychain',
    open: (dataDir, readOnly) => openVault({ dataDir, prefer: 'keychain', readOnly }),
    info: { backend: 'keychain', keyStorage: null },
    skip: noKeychain,
  },
  {
    name: 'file backend (key in the keychain when there is one)',
    prefer: 'file',
    open: (dataDir, readOnly) => openVault({ dataDir, prefer: 'file', readOnly }),
    info: {
      backend: 'file',
      keyStorage: keychain.available || requireKeychain ? 'keychain' : 'file',
      fileReason: 'SWITCHYARD_VAULT=file asks for the file vault',
    },
    skip: false,
  },
  {
    name: 'file backend with a key file',
    prefer: 'file',
    open: (dataDir, readOnly = false) => openFileVault({ dataDir, readOnly, keyStorage: 'file' }),
    info: { backend: 'file', keyStorage: 'file' },
    skip: false,
  },
];

for (const backend of backends) {
  describe(backend.name, { skip: backend.skip }, () => {
    it('reports where it keeps credentials', async () => {
      if (backend.prefer === 'keychain' && !keychain.available)
        assert.fail(`the keychain is required here: ${keychain.reason}`);
      assert.deepEqual((await backend.open(tempDir())).info, backend.info);
    });

    it('round-trips a secret under a fresh cred_ reference', async () => {
      const vault = await backend.open(tempDir());
      const first = await vault.put('sk-test-round-trip');
      const second = await vault.put('sk-test-round-trip');
      assert.match(first, REF);
      assert.notEqual(first, second);
      assert.equal(await vault.get(first), 'sk-test-round-trip');
      assert.equal(await vault.get(second), 'sk-test-round-trip');
    });

    it('keeps unicode and 8 KiB secrets intact, also after re-opening', async () => {
      const dir = tempDir();
      const vault = await backend.open(dir);
      const secrets = ['ключ-🔑-密钥-e\u0301-\u{1F600}', randomBytes(6144).toString('base64'), 'ü🔑'.repeat(1365)];
      assert.equal(Buffer.byteLength(secrets[1]!), 8192);
      const refs = await Promise.all(secrets.map((secret) => vault.put(secret)));
      const reopened = await backend.open(dir);
      for (const [i, ref] of refs.entries()) {
        assert.equal(await vault.get(ref), secrets[i]);
        assert.equal(await reopened.get(ref), secrets[i]);
      }
    });

    it('answers null for unknown references, including another data directory’s', async () => {
      const vault = await backend.open(tempDir());
      const elsewhere = await (await backend.open(tempDir())).put('sk-test-elsewhere');
      await vault.put('sk-test-here');
      for (const ref of [newId('cred_'), elsewhere, 'nope', '', 'cred_../../x', elsewhere.toLowerCase()]) {
        assert.equal(await vault.get(ref), null, ref);
      }
    });

    it('deletes idempotently and only the one reference', async () => {
      const dir = tempDir();
      const vault = await backend.open(dir);
      const [gone, kept] = [await vault.put('sk-test-gone'), await vault.put('sk-test-kept')];
      await vault.delete(gone);
      await vault.delete(gone);
      await vault.delete(newId('cred_'));
      await vault.delete('not-a-ref');
      assert.equal(await vault.get(gone), null);
      const reopened = await backend.open(dir);
      assert.equal(await reopened.get(gone), null);
      assert.equal(await reopened.get(kept), 'sk-test-kept');
    });

    it('keeps many references apart under concurrent puts and deletes', async () => {
      const dir = tempDir();
      const vault = await backend.open(dir);
      const secrets = Array.from({ length: 40 }, (_, i) => `sk-test-many-${i}-${randomBytes(8).toString('hex')}`);
      const refs = await Promise.all(secrets.map((secret) => vault.put(secret)));
      assert.equal(new Set(refs).size, refs.length);
      await Promise.all(refs.filter((_, i) => i % 2 === 0).map((ref) => vault.delete(ref)));
      const reopened = await backend.open(dir);
      const found = await Promise.all(refs.map((ref) => reopened.get(ref)));
      assert.deepEqual(
        found,
        secrets.map((secret, i) => (i % 2 === 0 ? null : secret)),
      );
    });

    it('persists across re-opening the data directory', async () => {
      const dir = tempDir();
      const ref = await (await backend.open(dir)).put('sk-test-persisted');
      assert.equal(await (await backend.open(dir)).get(ref), 'sk-test-persisted');
    });

    it('lets a read-only instance see references put after it opened, and refuses its writes', async () => {
      const dir = tempDir('data');
      const reader = await backend.open(dir, true);
      assert.equal(existsSync(dir), false, 'a read-only vault created the data directory');
      const writer = await backend.open(dir);
      const before = await writer.put('sk-test-before');
      assert.equal(await reader.get(before), 'sk-test-before');
      const later = await writer.put('sk-test-later');
      assert.equal(await reader.get(later), 'sk-test-later');
      await assert.rejects(reader.put('sk-test-nope'), VaultError);
      await assert.rejects(reader.delete(later), VaultError);
      assert.equal(await writer.get(later), 'sk-test-later');
    });

    it('serves a read-only vault in a worker thread', async () => {
      const dir = tempDir();
      const vault = await backend.open(dir);
      const ref = await vault.put('sk-test-worker');
      assert.deepEqual(await readInWorker(dir, backend.prefer, [ref, newId('cred_')]), ['sk-test-worker', null]);
    });

    it('never writes a secret in clear (or base64 or hex) under the data directory', async () => {
      const dir = tempDir();
      const vault = await backend.open(dir);
      const secrets = [`sk-test-plain-${randomBytes(12).toString('hex')}`, `ключ-🔑-${randomBytes(6).toString('hex')}`];
      const refs = await Promise.all(secrets.map((secret) => vault.put(secret)));
      await vault.delete(refs[0]!);
      await (await backend.open(dir, true)).get(refs[1]!);
      for (const secret of secrets) assertNowhereOnDisk(dir, secret);
    });
  });
}

describe('file backend extras', () => {
  async function fileVault(): Promise<{ dir: string; vault: Vault; refs: string[] }> {
    const dir = tempDir();
    const vault = await openFileVault({ dataDir: dir, readOnly: false, keyStorage: 'file' });
    const refs = [await vault.put('sk-test-alpha'), await vault.put('sk-test-bravo')];
    return { dir, vault, refs };
  }

  it('keeps vault.key and vault.enc at mode 0600 and leaves no temp files', async () => {
    const { dir } = await fileVault();
    assert.deepEqual(readdirSync(dir).sort(), [VAULT_FILE, KEY_FILE].sort());
    for (const name of [VAULT_FILE, KEY_FILE]) assert.equal(statSync(join(dir, name)).mode & 0o777, 0o600, name);
    assert.equal(Buffer.from(readFileSync(join(dir, KEY_FILE), 'utf8').trim(), 'base64').length, 32);
  });

  it('throws, never returns garbage, when any byte of vault.enc was changed', async () => {
    const { dir, refs } = await fileVault();
    const path = join(dir, VAULT_FILE);
    const original = readFileSync(path);
    for (let i = 0; i < original.length; i += Math.ceil(original.length / 23)) {
      const reader = await openVault({ dataDir: dir, prefer: 'file', readOnly: true });
      const tampered = Buffer.from(original);
      tampered[i] = tampered[i]! ^ 0x01;
      writeFileSync(path, tampered);
      await assert.rejects(reader.get(refs[1]!), (err) => assertSafeError(err, dir, 'sk-test-bravo'), `byte ${i}`);
      await assert.rejects(openVault({ dataDir: dir, prefer: 'file' }), VaultError, `byte ${i}`);
      writeFileSync(path, original);
    }
    assert.equal(await (await openVault({ dataDir: dir, prefer: 'file' })).get(refs[1]!), 'sk-test-bravo');
  });

  it('detects two entries whose ciphertexts were swapped', async () => {
    const { dir, refs } = await fileVault();
    const path = join(dir, VAULT_FILE);
    const [body, mac] = readFileSync(path, 'utf8').split('\n') as [string, string];
    const parsed = JSON.parse(body) as { entries: Record<string, string> };
    const [a, b] = [refs[0]!, refs[1]!];
    [parsed.entries[a], parsed.entries[b]] = [parsed.entries[b]!, parsed.entries[a]!];
    writeFileSync(path, `${JSON.stringify(parsed)}\n${mac}\n`);
    await assert.rejects(openVault({ dataDir: dir, prefer: 'file' }), /integrity check/);
    // Past the whole-file MAC, the reference bound into each entry's tag still refuses the swap.
    const key = Buffer.from(readFileSync(join(dir, KEY_FILE), 'utf8').trim(), 'base64');
    assert.equal(openEntry(key, a, sealEntry(key, a, 'sk-test-alpha')), 'sk-test-alpha');
    assert.throws(() => openEntry(key, b, sealEntry(key, a, 'sk-test-alpha')), /failed authentication/);
  });

  it('says the key is wrong when vault.key was replaced, and missing when it was removed', async () => {
    const { dir } = await fileVault();
    writeFileSync(join(dir, KEY_FILE), `${randomBytes(32).toString('base64')}\n`);
    await assert.rejects(openVault({ dataDir: dir, prefer: 'file' }), /wrong key/);
    rmSync(join(dir, KEY_FILE));
    await assert.rejects(openVault({ dataDir: dir, prefer: 'file' }), /key file is missing/);
  });
});

describe('choosing a backend', () => {
  it('follows SWITCHYARD_VAULT when no preference is passed, and rejects unknown values', async (t) => {
    const saved = process.env.SWITCHYARD_VAULT;
    t.after(() => (saved === undefined ? delete process.env.SWITCHYARD_VAULT : (process.env.SWITCHYARD_VAULT = saved)));
    process.env.SWITCHYARD_VAULT = 'file';
    assert.equal((await openVault({ dataDir: tempDir() })).info.backend, 'file');
    process.env.SWITCHYARD_VAULT = 'vault-of-doom';
    await assert.rejects(openVault({ dataDir: tempDir() }), /SWITCHYARD_VAULT must be one of auto, keychain, file/);
  });

  it('auto: a fresh directory gets the keychain exactly when it can store items, else says why not', async () => {
    const info = (await openVault({ dataDir: tempDir(), prefer: 'auto' })).info;
    if (keychain.available) assert.equal(info.backend, 'keychain');
    else
      assert.deepEqual(
        [info.backend, info.fileReason],
        ['file', `the OS keychain is not available: ${keychain.reason}`],
      );
  });

  it('auto: a directory that already holds a file vault keeps it', async () => {
    const dir = tempDir();
    const ref = await (await openVault({ dataDir: dir, prefer: 'file' })).put('sk-test-settled');
    const again = await openVault({ dataDir: dir, prefer: 'auto' });
    assert.equal(again.info.backend, 'file');
    assert.equal(await again.get(ref), 'sk-test-settled');
  });

  const hasKeychain = keychain.available && 'the keychain is available here';
  it('keychain forced but unavailable: a clear error', { skip: hasKeychain }, async () => {
    const dir = tempDir();
    await assert.rejects(openVault({ dataDir: dir, prefer: 'keychain' }), (err) => {
      assertSafeError(err, dir);
      assert.match((err as Error).message, /^keychain vault: .* the OS keychain is not available: /);
      return true;
    });
  });

  it('keychain: vault.id is 0600 and stable, and purging removes the directory’s items', {
    skip: noKeychain,
  }, async () => {
    const dir = tempDir();
    const vault = await openVault({ dataDir: dir, prefer: 'keychain' });
    const ref = await vault.put('sk-test-purge');
    const id = readFileSync(join(dir, INSTALLATION_FILE), 'utf8');
    assert.equal(statSync(join(dir, INSTALLATION_FILE)).mode & 0o777, 0o600);
    assert.equal(await (await openVault({ dataDir: dir, prefer: 'auto' })).get(ref), 'sk-test-purge');
    assert.equal(readFileSync(join(dir, INSTALLATION_FILE), 'utf8'), id);
    assert.equal(await purgeKeychainItems(dir), 1);
    assert.equal(await (await openVault({ dataDir: dir, prefer: 'keychain' })).get(ref), null);
  });
});
