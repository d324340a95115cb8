import type { AuditAction, AuditMetadata, AuditResourceType } from '../protocol/http/audit.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { Actor } from './actor.ts';

// The skeleton of every audited control write: the store writes and the audit record of who made them, in one
// LMDB transaction, resolved once it is committed and flushed. What a service keeps in memory (its maps, the
// catalog, hot settings) follows in the caller, after the commit: a reader never sees what the store may still
// lose, and a failed commit leaves memory as it was.

/** The part of an audit record that varies per write; the resource type is the service's. */
export interface AuditEntry {
  action: AuditAction;
  actor: Actor;
  /** Null for the service's own writes (the bootstrap token). */
  requestId: string | null;
  /** Allow-listed by the writer: names, counts, flags and scope lists, never a secret or a label. */
  metadata: AuditMetadata;
}

/** How a repository stages its records inside the caller's transaction. */
export interface RecordStaging<R> {
  stagePut(record: R): void;
  stageRemove(key: string): void;
}

export interface AuditedCommits {
  /**
   * Stages `stage` (which may throw to abort the transaction) and then the audit record of `resourceId`, in
   * one commit. With no `stage`, an audit record alone (a test, a refresh asked for).
   */
  commit(resourceId: string, entry: AuditEntry, stage?: () => void): Promise<void>;
  /** Only stages the audit record, inside a transaction the caller runs (a repository's own commit). */
  stageAudit(resourceId: string, entry: AuditEntry): void;
}

export interface AuditedCrud<R> extends AuditedCommits {
  /** Puts `record` (a create or an update), then `alongside`, then the audit record: one commit. */
  put(record: R, entry: AuditEntry, alongside?: () => void): Promise<void>;
  /** Removes the record under `key`, then `alongside`, then the audit record: one commit. */
  remove(key: string, entry: AuditEntry, alongside?: () => void): Promise<void>;
}

interface CommitDeps {
  env: StoreEnv;
  audit: AuditRepo;
  resourceType: AuditResourceType;
}

interface CrudDeps<R> extends CommitDeps {
  repo: RecordStaging<R>;
  /** The record's key, which is also its audit records' resourceId. */
  keyOf(record: R): string;
}

/** With a repository: keyed puts and removals besides `commit`; without (settings): `commit` alone. */
export function auditedCrud<R>(deps: CrudDeps<R>): AuditedCrud<R>;
export function auditedCrud(deps: CommitDeps): AuditedCommits;
export function auditedCrud<R>(deps: CommitDeps & Partial<CrudDeps<R>>): AuditedCrud<R> | AuditedCommits {
  const { env, audit, resourceType, repo, keyOf } = deps;
  const stageAudit = (resourceId: string, { action, actor, requestId, metadata }: AuditEntry): void =>
    void audit.stageAppend({ action, resourceType, resourceId, ...actor, requestId, metadata });
  const commit = (resourceId: string, entry: AuditEntry, stage?: () => void): Promise<void> =>
    env.commit(() => {
      stage?.();
      stageAudit(resourceId, entry);
    });
  if (repo === undefined || keyOf === undefined) return { commit, stageAudit };
  return {
    commit,
    stageAudit,
    put: (record, entry, alongside) =>
      commit(keyOf(record), entry, () => {
        repo.stagePut(record);
        alongside?.();
      }),
    remove: (key, entry, alongside) =>
      commit(key, entry, () => {
        repo.stageRemove(key);
        alongside?.();
      }),
  };
}
