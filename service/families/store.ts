import { join } from 'node:path';
import { auditRepo, type AuditRepo } from '../../store/audit-repo.ts';
import { lockDataDir } from '../../store/dir-lock.ts';
import { ensurePrivateDir, openStoreEnv, type StoreEnv } from '../../store/env.ts';
import { modelRepo, type ModelRepo } from '../../store/model-repo.ts';
import { providerRepo, type ProviderRepo } from '../../store/provider-repo.ts';
import { openVault, type Vault } from '../../store/vault/index.ts';
import { TOKEN_FILE } from '../data-dir.ts';
import type { Built } from '../family.ts';
import type { Base } from '../parts.ts';

export interface StoreParts {
  env: StoreEnv;
  audit: AuditRepo;
  vault: Vault;
  providerStore: ProviderRepo;
  models: ModelRepo;
  tokenFile: string;
}

/** The data directory's lock, the LMDB environment and the credential vault: opened first, closed last. */
export async function storeFamily(p: Base): Promise<Built<StoreParts>> {
  ensurePrivateDir(p.dataDir);
  const lock = lockDataDir(p.dataDir);
  let env: StoreEnv;
  try {
    env = openStoreEnv(p.dataDir);
  } catch (err) {
    lock.release();
    throw err;
  }
  const close = async () => {
    await env.close();
    lock.release();
  };
  let parts: StoreParts;
  try {
    parts = {
      env,
      audit: auditRepo(env),
      providerStore: providerRepo(env),
      models: modelRepo(env),
      tokenFile: join(p.dataDir, TOKEN_FILE),
      vault: await openVault({ dataDir: p.dataDir }),
    };
  } catch (err) {
    await close();
    throw err;
  }
  const { info } = parts.vault;
  if (info.backend === 'file' && !info.fileReason?.startsWith('SWITCHYARD_VAULT')) {
    // Keys then sit in a file beside the store (encrypted; its key in the keychain or a 0600 file): say so.
    p.log.warn(
      { vault: 'file', keyStorage: info.keyStorage, reason: info.fileReason },
      'provider credentials are kept in the encrypted file vault, not the OS keychain',
    );
  } else p.log.info({ vault: info.backend, keyStorage: info.keyStorage }, 'credential vault ready');
  return { family: { close }, parts };
}
