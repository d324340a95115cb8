import { toServiceError } from '../../protocol/errors.ts';
import type { ProxyResult, ProxyTask } from '../../protocol/messages.ts';
import { credentialOf } from './credentials.ts';
import { listModels } from './list-models.ts';

export type { ProxyWorkerData } from './credentials.ts';

/** One-shot tasks (model lists) run in the piscina pool; the relay has its own multiplexed workers. */
export default async function run(task: ProxyTask): Promise<ProxyResult> {
  try {
    switch (task.kind) {
      case 'models.list':
        return { kind: task.kind, ok: true, models: await listModels(task.target, await credentialOf(task.credentialRef)) };
    }
  } catch (err) {
    return { kind: task.kind, ok: false, error: toServiceError(err).toPayload() };
  }
}
