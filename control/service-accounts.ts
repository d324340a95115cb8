import { ServiceError } from '../protocol/errors.ts';
import type {
  ServiceAccountCreate,
  ServiceAccountUpdate,
  ServiceAccountView,
} from '../protocol/http/service-accounts.ts';
import { newId } from '../protocol/ids.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { ServiceAccountRecord, ServiceAccountRepo } from '../store/service-account-repo.ts';
import type { Actor } from './actor.ts';
import { auditedCrud } from './crud.ts';

// Service accounts: named owners for tokens (an agent fleet), so usage can be grouped by who runs, not by
// which of its rotating tokens. An account that still owns tokens cannot be deleted: revoking them silently
// would cut off a running fleet, so the person revokes or the answer is 409.

export const MAX_SERVICE_ACCOUNTS = 1000;

export interface ServiceAccounts {
  list(): ServiceAccountView[];
  get(id: string): ServiceAccountView;
  exists(id: string): boolean;
  create(input: ServiceAccountCreate, actor: Actor, requestId: string): Promise<ServiceAccountView>;
  update(id: string, patch: ServiceAccountUpdate, actor: Actor, requestId: string): Promise<ServiceAccountView>;
  remove(id: string, actor: Actor, requestId: string): Promise<ServiceAccountView>;
}

interface Deps {
  env: StoreEnv;
  repo: ServiceAccountRepo;
  audit: AuditRepo;
  /** Live tokens per service account ID, read at call time (tokens change underneath). */
  tokenCounts(): Map<string, number>;
}

/** What the API shows of an account: its record, with how many live tokens it owns. */
function viewOf(r: ServiceAccountRecord, counts: Map<string, number>): ServiceAccountView {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    tokenCount: counts.get(r.id) ?? 0,
    createdAt: new Date(r.createdAt).toISOString(),
    updatedAt: new Date(r.updatedAt).toISOString(),
  };
}

// Every account is held in memory by ID (at most MAX_SERVICE_ACCOUNTS); each write goes through the audited
// store first, then into the map.
export function createServiceAccounts({ env, repo, audit, tokenCounts }: Deps): ServiceAccounts {
  const byId = new Map<string, ServiceAccountRecord>();
  for (const r of repo.all()) byId.set(r.id, r);

  const view = (r: ServiceAccountRecord, counts = tokenCounts()): ServiceAccountView => viewOf(r, counts);
  const notFound = (id: string) =>
    new ServiceError('NOT_FOUND', `No service account with ID \`${id.slice(0, 160)}\`.`, { param: 'id' });
  const mustGet = (id: string) => {
    const r = byId.get(id);
    if (!r) throw notFound(id);
    return r;
  };
  const crud = auditedCrud<ServiceAccountRecord>({
    env,
    audit,
    resourceType: 'service-account',
    repo,
    keyOf: (r) => r.id,
    notFound,
  });

  return {
    list() {
      const counts = tokenCounts();
      return [...byId.values()]
        .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
        .map((r) => view(r, counts));
    },
    get: (id) => view(mustGet(id)),
    exists: (id) => byId.has(id),

    async create(input, actor, requestId) {
      if (byId.size >= MAX_SERVICE_ACCOUNTS) {
        throw new ServiceError(
          'CONFLICT',
          `At most ${MAX_SERVICE_ACCOUNTS} service accounts may exist; delete one first.`,
        );
      }
      const now = Date.now();
      const record: ServiceAccountRecord = {
        id: newId('sa_', now),
        name: input.name,
        description: input.description ?? null,
        createdAt: now,
        updatedAt: now,
      };
      await crud.create(record, {
        action: 'service-account.create',
        actor,
        requestId,
        metadata: { name: record.name },
      });
      byId.set(record.id, record);
      return view(record);
    },

    async update(id, patch, actor, requestId) {
      const current = mustGet(id);
      const next: ServiceAccountRecord = {
        ...current,
        ...(patch.name !== undefined && { name: patch.name }),
        ...(patch.description !== undefined && { description: patch.description }),
        updatedAt: Date.now(),
      };
      await crud.update(next, {
        action: 'service-account.update',
        actor,
        requestId,
        metadata: { changedFields: Object.keys(patch).sort() },
      });
      byId.set(id, next);
      return view(next);
    },

    async remove(id, actor, requestId) {
      const current = mustGet(id);
      const owned = tokenCounts().get(id) ?? 0;
      if (owned > 0) {
        throw new ServiceError(
          'CONFLICT',
          `Service account \`${id}\` still owns ${owned} token(s); revoke them first.`,
          {
            param: 'id',
            details: { tokenCount: owned },
          },
        );
      }
      await crud.remove(id, { action: 'service-account.delete', actor, requestId, metadata: { name: current.name } });
      byId.delete(id);
      return view(current);
    },
  };
}
