import { workerData } from 'node:worker_threads';
import { toServiceError } from '../../protocol/errors.ts';
import type { ProxyResult, ProxyTask } from '../../protocol/messages.ts';
import { openVault, type Vault } from '../../store/vault/index.ts';
import { listModels } from './list-models.ts';

// One proxy worker. It reads credentials from the vault itself (cached: references never change their
// secret), so the main thread never holds a provider key.

export interface ProxyWorkerData {
  dataDir: string;
}

let vault: Promise<Vault> | undefined;
const secrets = new Map<string, string>();

async function credential(ref: string | null): Promise<string | null> {
  if (ref === null) return null;
  const cached = secrets.get(ref);
  if (cached !== undefined) return cached;
  vault ??= openVault({ dataDir: (workerData as ProxyWorkerData).dataDir, readOnly: true });
  const secret = await (await vault).get(ref);
  if (secret !== null) secrets.set(ref, secret);
  return secret;
}

export default async function run(task: ProxyTask): Promise<ProxyResult> {
  try {
    switch (task.kind) {
      case 'models.list':
        return { kind: task.kind, ok: true, models: await listModels(task.target, await credential(task.credentialRef)) };
    }
  } catch (err) {
    return { kind: task.kind, ok: false, error: toServiceError(err).toPayload() };
  }
}
