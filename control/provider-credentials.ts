import { type CredentialRecord, usableCredentials } from '../protocol/catalog.ts';
import { ServiceError } from '../protocol/errors.ts';
import {
  CREDENTIAL_BOUNDS,
  CREDENTIAL_ID_PREFIX,
  DEFAULT_CREDENTIAL_LABEL,
  type CredentialCreate,
  type CredentialUpdate,
  type CredentialView,
} from '../protocol/http/providers.ts';
import { newId } from '../protocol/ids.ts';
import type { ProvidersPort } from '../protocol/ports/providers.ts';
import { redactSecrets } from '../protocol/redact.ts';
import type { ProviderRecord } from '../store/provider-repo.ts';
import type { Vault } from '../store/vault/index.ts';
import { actorOf } from './actor.ts';
import type { AuditedCrud, Replaced } from './crud.ts';
import type { EventBus } from './events.ts';
import { checkCredential } from './provider-validation.ts';

// A provider's credentials (docs/api.md, Provider credentials): its keys, each in the vault behind a reference
// of its own, stored inside the provider's record. So every write of one is a write of the provider, made from
// the record as stored (crud.updateFrom): a credential write racing the provider's removal, or another write of
// the same credential, looks again inside its transaction and writes nothing when what it changes is gone.

type CredentialMethods = Pick<
  ProvidersPort,
  'listCredentials' | 'addCredential' | 'updateCredential' | 'removeCredential' | 'rejectCredential'
>;

export interface CredentialWritesDeps {
  crud: AuditedCrud<ProviderRecord>;
  vault: Vault;
  bus: Pick<EventBus, 'publish'>;
  mustGet(id: string): ProviderRecord;
  /** Whether the provider's removal has begun: no key is stored for it any more. */
  removing(id: string): boolean;
  notFound(id: string): ServiceError;
  /** After a commit: memory, the catalog (every edge thread), a model list when the key it uses changed. */
  committed(previous: ProviderRecord, next: ProviderRecord): Promise<void>;
}

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

export function credentialNotFound(providerId: string, credentialId: string): ServiceError {
  return new ServiceError(
    'NOT_FOUND',
    `Provider \`${providerId}\` has no credential \`${credentialId.slice(0, CREDENTIAL_BOUNDS.idMax + 10)}\`.`,
    { param: 'credId' },
  );
}

/** The first key a call or a model list may use; null when none is left. */
export const firstUsableRef = (r: Pick<ProviderRecord, 'credentials'>): string | null =>
  usableCredentials(r)[0]?.ref ?? null;

/** A new key in the vault as the one credential a provider gets with its own POST or PATCH. */
export async function defaultCredential(vault: Vault, secret: string, now: number): Promise<CredentialRecord> {
  return newCredential({ label: DEFAULT_CREDENTIAL_LABEL, ref: await vault.put(secret), now });
}

function newCredential(o: { label: string; ref: string; now: number; weight?: number; enabled?: boolean }) {
  const { label, ref, now } = o;
  return {
    id: newId(CREDENTIAL_ID_PREFIX, now),
    label,
    weight: o.weight ?? 1,
    enabled: o.enabled ?? true,
    ref,
    rejectedAt: null,
    createdAt: now,
    updatedAt: now,
  } satisfies CredentialRecord;
}

/** The vault entries of `credentials`, deleted; a cleanup after a failed write (`quiet`) ignores a failure. */
export async function deleteRefs(vault: Vault, credentials: readonly CredentialRecord[], quiet = false) {
  await Promise.all(credentials.map((c) => (quiet ? vault.delete(c.ref).catch(() => undefined) : vault.delete(c.ref))));
}

/** The credentials `previous` held under a vault reference that `next` no longer names. */
export function droppedCredentials(previous: ProviderRecord, next: ProviderRecord): CredentialRecord[] {
  const kept = new Set(next.credentials.map((c) => c.ref));
  return previous.credentials.filter((c) => !kept.has(c.ref));
}

/** A credential as routes show it; the key pool's live figures are added by the route (none known here). */
export function toCredentialView(c: CredentialRecord): CredentialView {
  return {
    id: c.id,
    label: c.label,
    weight: c.weight,
    enabled: c.enabled,
    rejected: c.rejectedAt !== null,
    rejectedAt: c.rejectedAt === null ? null : new Date(c.rejectedAt).toISOString(),
    createdAt: new Date(c.createdAt).toISOString(),
    updatedAt: new Date(c.updatedAt).toISOString(),
    headroom: null,
    coolingUntil: null,
    sessions: 0,
  };
}

/** A label is shown in lists, logs and events: one line, and never a key pasted into the wrong field. */
function checkLabel(label: string | undefined, secret: string | undefined): void {
  if (label === undefined) return;
  if (/[\u0000-\u001f\u007f]/.test(label)) throw invalid('label', 'A label is one line of text.');
  if (label.trim() === '') throw invalid('label', 'A label needs a character other than a space.');
  if (label === secret || redactSecrets(label) !== label)
    throw invalid('label', 'A label is shown in lists and logs: it must not hold a key.');
}

/** Thrown inside a commit that finds nothing to change: it writes nothing, and the caller answers without it. */
const UNCHANGED = Symbol('unchanged');

export function credentialWrites(deps: CredentialWritesDeps): CredentialMethods {
  const { vault, mustGet } = deps;

  return {
    listCredentials: (providerId) => mustGet(providerId).credentials.map(toCredentialView),

    async addCredential(providerId, input: CredentialCreate, actor, requestId) {
      const current = mustGet(providerId);
      checkCredential(current.kind, input.credential);
      checkLabel(input.label, input.credential);
      checkRoom(current);
      checkFree(current, input.label, null);
      if (deps.removing(providerId)) throw deps.notFound(providerId);
      const now = Date.now();
      const added = newCredential({ ...input, ref: await vault.put(input.credential), now });
      const metadata = { credentialId: added.id, weight: added.weight, enabled: added.enabled };
      const { record } = await write(
        deps,
        providerId,
        (stored) => {
          // A credential added since `current` was read counts too.
          checkRoom(stored);
          checkFree(stored, added.label, null);
          return withCredentials(stored, [...stored.credentials, added], now);
        },
        { action: 'credential.create', actor, requestId, metadata },
        added.ref,
      );
      return toCredentialView(mustFind(record, added.id));
    },

    async updateCredential(providerId, credentialId, patch: CredentialUpdate, actor, requestId) {
      const current = mustGet(providerId);
      const before = mustFind(current, credentialId);
      if (patch.credential !== undefined) checkCredential(current.kind, patch.credential);
      checkLabel(patch.label, patch.credential);
      if (patch.label !== undefined) checkFree(current, patch.label, credentialId);
      if (deps.removing(providerId)) throw deps.notFound(providerId);
      const now = Date.now();
      const newRef = patch.credential === undefined ? null : await vault.put(patch.credential);
      const metadata = { credentialId: before.id, changedFields: Object.keys(patch).sort() };
      const { record } = await write(
        deps,
        providerId,
        (stored) => {
          const was = mustFind(stored, credentialId);
          if (patch.label !== undefined) checkFree(stored, patch.label, credentialId);
          const next = editedCredential(was, patch, newRef, now);
          return withCredentials(
            stored,
            stored.credentials.map((c) => (c.id === credentialId ? next : c)),
            now,
          );
        },
        { action: 'credential.update', actor, requestId, metadata },
        newRef,
      );
      return toCredentialView(mustFind(record, credentialId));
    },

    async removeCredential(providerId, credentialId, actor, requestId) {
      mustFind(mustGet(providerId), credentialId);
      const now = Date.now();
      await write(
        deps,
        providerId,
        (stored) => {
          mustFind(stored, credentialId);
          return withCredentials(
            stored,
            stored.credentials.filter((c) => c.id !== credentialId),
            now,
          );
        },
        { action: 'credential.delete', actor, requestId, metadata: { credentialId } },
        null,
      );
    },

    async rejectCredential(providerId, credentialId, status, seenUpdatedAt) {
      if (status !== 401 && status !== 403)
        throw invalid('status', 'A credential is set aside for a 401 or 403 from its provider only.');
      // Set aside already, or edited after the refused call read it (the edit is the person's answer).
      const stale = (c: CredentialRecord) =>
        c.rejectedAt !== null || (seenUpdatedAt !== undefined && c.updatedAt > seenUpdatedAt);
      if (stale(mustFind(mustGet(providerId), credentialId))) return false;
      let rejected: CredentialRecord | undefined;
      try {
        await write(
          deps,
          providerId,
          (stored) => {
            const was = mustFind(stored, credentialId);
            // Another thread's report of the same refusal, or an edit, committed first.
            if (stale(was)) throw UNCHANGED;
            rejected = { ...was, rejectedAt: Date.now() };
            return { ...stored, credentials: stored.credentials.map((c) => (c.id === credentialId ? rejected! : c)) };
          },
          {
            action: 'credential.reject',
            actor: actorOf(null),
            requestId: null,
            metadata: { credentialId, status },
          },
          null,
        );
      } catch (err) {
        if (err === UNCHANGED) return false;
        throw err;
      }
      deps.bus.publish('credential.rejected', { providerId, credentialId, label: rejected!.label, status });
      return true;
    },
  };
}

function mustFind(r: ProviderRecord, credentialId: string): CredentialRecord {
  const c = credentialId.length <= CREDENTIAL_BOUNDS.idMax ? r.credentials.find((x) => x.id === credentialId) : null;
  if (!c) throw credentialNotFound(r.id, credentialId);
  return c;
}

/** Unique within the provider, compared as typed. */
function checkFree(r: ProviderRecord, label: string, except: string | null): void {
  if (r.credentials.some((c) => c.label === label && c.id !== except))
    throw new ServiceError('CONFLICT', `Provider \`${r.id}\` already has a credential labelled \`${label}\`.`, {
      param: 'label',
    });
}

function checkRoom(r: ProviderRecord): void {
  if (r.credentials.length >= CREDENTIAL_BOUNDS.count)
    throw invalid(
      'credential',
      `A provider holds at most ${CREDENTIAL_BOUNDS.count} credentials; remove one before adding another.`,
    );
}

const withCredentials = (r: ProviderRecord, credentials: CredentialRecord[], now: number): ProviderRecord => ({
  ...r,
  credentials,
  updatedAt: now,
});

/** The write of one credential, from the record as stored; a new key's vault entry is dropped if it fails. */
async function write(
  deps: Pick<CredentialWritesDeps, 'crud' | 'vault' | 'committed'>,
  providerId: string,
  change: (stored: ProviderRecord) => ProviderRecord,
  entry: Parameters<AuditedCrud<ProviderRecord>['updateFrom']>[2],
  newRef: string | null,
): Promise<Replaced<ProviderRecord>> {
  let replaced: Replaced<ProviderRecord>;
  try {
    replaced = await deps.crud.updateFrom(providerId, change, entry);
  } catch (err) {
    if (newRef !== null) await deps.vault.delete(newRef).catch(() => undefined);
    throw err;
  }
  await deps.committed(replaced.previous, replaced.record);
  await deleteRefs(deps.vault, droppedCredentials(replaced.previous, replaced.record));
  return replaced;
}

/** Any edit is a person's answer to a refusal: the key is tried again. */
function editedCredential(
  was: CredentialRecord,
  patch: CredentialUpdate,
  newRef: string | null,
  now: number,
): CredentialRecord {
  return {
    ...was,
    label: patch.label ?? was.label,
    weight: patch.weight ?? was.weight,
    enabled: patch.enabled ?? was.enabled,
    ref: newRef ?? was.ref,
    rejectedAt: null,
    updatedAt: now,
  };
}
