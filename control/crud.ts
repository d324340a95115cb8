import type { ServiceError } from '../protocol/errors.ts';
import type { AuditAction, AuditMetadata, AuditResourceType } from '../protocol/http/audit.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { Actor } from './actor.ts';

// The skeleton of every audited control write: the store writes and the audit record of who made them, in one
// LMDB transaction, resolved once it is committed and flushed. What a service keeps in memory (its maps, the
// catalog, hot settings) follows in the caller, after the commit: a reader never sees what the store may still
// lose, and a failed commit leaves memory as it was.
//
// A service checks a record exists against its memory, then commits later: a removal may commit in between (a
// DELETE racing a PATCH). An update and a removal therefore look again inside their write transaction, which
// reads what every earlier transaction committed, and write nothing when the record is gone. The look comes
// before any write: lmdb-js commits what a transaction callback wrote before it threw.

/** The part of an audit record that varies per write; the resource type is the service's. */
export interface AuditEntry {
  action: AuditAction;
  actor: Actor;
  /** Null for the service's own writes (the bootstrap token). */
  requestId: string | null;
  /** Allow-listed by the writer: names, counts, flags and scope lists, never a secret or a label. */
  metadata: AuditMetadata;
}

/** How a repository reads and stages its records inside the caller's transaction. */
export interface RecordStaging<R> {
  get(key: string): R | undefined;
  stagePut(record: R): void;
  stageRemove(key: string): void;
}

export interface AuditedCommits {
  /**
   * Stages `stage` and then the audit record of `resourceId`, in one commit; resolves with what `stage`
   * returned. A throw before `stage` writes anything aborts the write (after, what it wrote stays). With no
   * `stage`, an audit record alone (a test, a refresh asked for).
   */
  commit<T = void>(resourceId: string, entry: AuditEntry, stage?: () => T): Promise<T>;
  /** Only stages the audit record, inside a transaction the caller runs (a repository's own commit). */
  stageAudit(resourceId: string, entry: AuditEntry): void;
}

export interface AuditedCrud<R> extends AuditedCommits {
  /** Puts a new `record` (the caller found its key free), then `alongside`, then the audit record: one commit. */
  create(record: R, entry: AuditEntry, alongside?: () => void): Promise<void>;
  /**
   * Replaces the record stored under `record`'s key, then `alongside`, then the audit record: one commit, or
   * none and the service's NOT_FOUND when no record is stored there any more. Resolves with both records.
   */
  update(record: R, entry: AuditEntry, alongside?: () => void): Promise<Replaced<R>>;
  /** As `update`, with the record made from the one stored under `key` (a field a racing update wrote since). */
  updateFrom(key: string, change: (stored: R) => R, entry: AuditEntry, alongside?: () => void): Promise<Replaced<R>>;
  /**
   * Removes the record under `key`, then `alongside`, then the audit record: one commit, or none and the
   * service's NOT_FOUND when no record is stored there any more. Resolves with the record removed, as stored.
   */
  remove(key: string, entry: AuditEntry, alongside?: () => void): Promise<R>;
}

export interface Replaced<R> {
  /** What the store held just before this update: the last write's record, not the one the caller read. */
  previous: R;
  record: R;
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
  /** The service's own error for a key with no record (its message and param, as its reads answer). */
  notFound(key: string): ServiceError;
}

/** With a repository: keyed writes besides `commit`; without (settings): `commit` alone. */
export function auditedCrud<R>(deps: CrudDeps<R>): AuditedCrud<R>;
export function auditedCrud(deps: CommitDeps): AuditedCommits;
export function auditedCrud<R>(deps: CommitDeps & Partial<CrudDeps<R>>): AuditedCrud<R> | AuditedCommits {
  const { env, audit, resourceType, repo, keyOf, notFound } = deps;
  const stageAudit = (resourceId: string, { action, actor, requestId, metadata }: AuditEntry): void =>
    void audit.stageAppend({ action, resourceType, resourceId, ...actor, requestId, metadata });
  const commit = <T = void>(resourceId: string, entry: AuditEntry, stage?: () => T): Promise<T> =>
    env.commit(() => {
      const staged = stage?.() as T;
      stageAudit(resourceId, entry);
      return staged;
    });
  if (repo === undefined || keyOf === undefined || notFound === undefined) return { commit, stageAudit };
  const stored = (key: string): R => {
    const record = repo.get(key);
    if (record === undefined) throw notFound(key);
    return record;
  };
  const updateFrom: AuditedCrud<R>['updateFrom'] = (key, change, entry, alongside) =>
    commit(key, entry, () => {
      const previous = stored(key);
      const record = change(previous);
      repo.stagePut(record);
      alongside?.();
      return { previous, record };
    });
  return {
    commit,
    stageAudit,
    create: (record, entry, alongside) =>
      commit(keyOf(record), entry, () => {
        repo.stagePut(record);
        alongside?.();
      }),
    update: (record, entry, alongside) => updateFrom(keyOf(record), () => record, entry, alongside),
    updateFrom,
    remove: (key, entry, alongside) =>
      commit(key, entry, () => {
        const previous = stored(key);
        repo.stageRemove(key);
        alongside?.();
        return previous;
      }),
  };
}
