import { toServiceError } from '../../protocol/errors.ts';
import type { ProxyResult, ProxyTask } from '../../protocol/messages.ts';
import { credentialOf } from './credentials.ts';
import { listModels, listSlots } from './list-models.ts';
import { withholdEchoes } from './scrub.ts';

export type { ProxyWorkerData } from './credentials.ts';

/** One-shot tasks (model lists) run in the piscina pool; the relay has its own multiplexed workers. */
export default async function run(task: ProxyTask): Promise<ProxyResult> {
  try {
    switch (task.kind) {
      case 'models.list': {
        const credential = await credentialOf(task.credentialRef);
        const listed = withholdEchoes(await listModels(task.target, credential), credential);
        const slots = await listSlots(task.target, credential);
        return { kind: task.kind, ok: true, ...listed, ...(slots !== null && { slots }) };
      }
    }
  } catch (err) {
    return { kind: task.kind, ok: false, error: toServiceError(err).toPayload() };
  }
}
