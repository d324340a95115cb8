import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import { type ProviderRepo, upgradedRecord } from '../store/provider-repo.ts';
import { actorOf } from './actor.ts';
import { auditedCrud } from './crud.ts';

// At start, before anything reads providers: records stored when a provider held one key (`credentialRef`) are
// written back as today's (`credentials`, that key as the credential `default`, its vault reference unchanged,
// so the key is not read or copied). One commit for all of them, each with its audit record as the service's
// own write; a store with none writes nothing.

export async function upgradeProviders(deps: { env: StoreEnv; providers: ProviderRepo; audit: AuditRepo }) {
  const old = deps.providers.legacy();
  if (old.length === 0) return 0;
  const crud = auditedCrud({ env: deps.env, audit: deps.audit, resourceType: 'provider' });
  await deps.env.commit(() => {
    for (const record of old) {
      const next = upgradedRecord(record);
      deps.providers.stagePut(next);
      crud.stageAudit(record.id, {
        action: 'provider.upgrade',
        actor: actorOf(null),
        requestId: null,
        metadata: { credentials: next.credentials.length },
      });
    }
  });
  return old.length;
}
