import { join } from 'node:path';
import { auditRepo } from '../../store/audit-repo.ts';
import { lockDataDir } from '../../store/dir-lock.ts';
import { ensurePrivateDir, openStoreEnv } from '../../store/env.ts';
import { modelRepo } from '../../store/model-repo.ts';
import { providerRepo } from '../../store/provider-repo.ts';
import { openVault } from '../../store/vault/index.ts';
import { TOKEN_FILE } from '../data-dir.ts';
import type { Family } from '../family.ts';
import type { Parts } from '../parts.ts';

/** The data directory's lock, the LMDB environment and the credential vault: opened first, closed last. */
export async function storeFamily(p: Parts): Promise<Family> {
  ensurePrivateDir(p.dataDir);
  const lock = lockDataDir(p.dataDir);
  try {
    p.env = openStoreEnv(p.dataDir);
  } catch (err) {
    lock.release();
    throw err;
  }
  const close = async () => {
    await p.env.close();
    lock.release();
  };
  try {
    p.audit = auditRepo(p.env);
    p.providerStore = providerRepo(p.env);
    p.models = modelRepo(p.env);
    p.tokenFile = join(p.dataDir, TOKEN_FILE);
    p.vault = await openVault({ dataDir: p.dataDir });
  } catch (err) {
    await close();
    throw err;
  }
  const { info } = p.vault;
  if (info.backend === 'file' && !info.fileReason?.startsWith('SWITCHYARD_VAULT')) {
    // Keys then sit in a file beside the store (encrypted; its key in the keychain or a 0600 file): say so.
    p.log.warn(
      { vault: 'file', keyStorage: info.keyStorage, reason: info.fileReason },
      'provider credentials are kept in the encrypted file vault, not the OS keychain',
    );
  } else p.log.info({ vault: info.backend, keyStorage: info.keyStorage }, 'credential vault ready');
  return { close };
}
