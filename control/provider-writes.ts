import { ServiceError } from '../protocol/errors.ts';
import type { ProviderCreate, ProviderUpdate } from '../protocol/http/providers.ts';
import type { ProvidersPort } from '../protocol/ports/providers.ts';
import { DEFAULT_TIMEOUTS, PROVIDER_ID } from '../protocol/providers.ts';
import type { ModelRepo } from '../store/model-repo.ts';
import type { ProviderRecord } from '../store/provider-repo.ts';
import type { Vault } from '../store/vault/index.ts';
import type { Actor } from './actor.ts';
import { checkCredentialRedirect } from './credential-redirect.ts';
import type { auditedCrud } from './crud.ts';
import { defaultCredential, deleteRefs, droppedCredentials, firstUsableRef } from './provider-credentials.ts';
import { checkBaseUrl, checkCredential, checkHints, checkNotOwnListener } from './provider-validation.ts';

// A provider's create, update and remove (control/provider-service.ts): checked, its secrets stored in the vault
// before the commit and the replaced ones deleted after it, the catalog told, and its model list refreshed when
// what reaches it changed.

export interface ProviderWritesDeps {
  crud: ReturnType<typeof auditedCrud<ProviderRecord>>;
  vault: Vault;
  models: ModelRepo;
  byId: Map<string, ProviderRecord>;
  /** Providers whose removal has started: an update no longer stores a credential for one. */
  removing: Set<string>;
  mustGet(id: string): ProviderRecord;
  notFound(id: string): ServiceError;
  ownPort(): number | null;
  onChange(id: string, provider: ProviderRecord | null, listing?: null): unknown;
  wantsList(r: ProviderRecord): boolean;
  refreshInBackground(id: string): void;
  forgetProvider?(id: string): () => void;
  defaultId(kind: ProviderCreate['kind']): string;
}

/** The writes, answering the record each stores (the service answers its view). */
export interface ProviderWrites {
  create(input: ProviderCreate, actor: Actor, requestId: string): Promise<ProviderRecord>;
  update(
    id: string,
    patch: ProviderUpdate,
    actor: Actor,
    requestId: string,
    mayRedirect: boolean,
  ): Promise<ProviderRecord>;
  remove: ProvidersPort['remove'];
}

export function providerWrites(deps: ProviderWritesDeps): ProviderWrites {
  const { crud, vault, models, byId, removing, mustGet, onChange, wantsList, refreshInBackground } = deps;
  return {
    async create(input, actor, requestId) {
      const id = input.id ?? deps.defaultId(input.kind);
      checkNewId(id, byId);
      const baseUrl = checkBaseUrl(input.kind, input.baseUrl);
      checkNotOwnListener(baseUrl, deps.ownPort());
      const hints = checkHints(input.kind, input.hints);
      checkCredential(input.kind, input.credential);
      const now = Date.now();
      const credentials = input.credential === undefined ? [] : [await defaultCredential(vault, input.credential, now)];
      const record = newRecord(input, { id, baseUrl, hints, credentials, now });
      const metadata = {
        kind: record.kind,
        credentialConfigured: credentials.length > 0,
        hintNames: Object.keys(hints),
      };
      try {
        await crud.create(record, { action: 'provider.create', actor, requestId, metadata });
      } catch (err) {
        await deleteRefs(vault, credentials, true);
        throw err;
      }
      byId.set(id, record);
      await onChange(id, record);
      if (wantsList(record)) refreshInBackground(id);
      return record;
    },

    async update(id, patch, actor, requestId, mayRedirect) {
      const current = mustGet(id);
      const { baseUrl, hints } = checkPatch(current, patch, deps.ownPort(), mayRedirect);
      if (removing.has(id)) throw deps.notFound(id);
      const now = Date.now();
      // `credential` replaces every key the provider holds by this one (or, null, removes them all).
      const replacement =
        typeof patch.credential === 'string' ? [await defaultCredential(vault, patch.credential, now)] : [];
      const fields = patchedFields(current, patch, { baseUrl, hints, now });
      const metadata = { changedFields: Object.keys(patch).sort(), credentialConfigured: false };
      let replaced: { previous: ProviderRecord; record: ProviderRecord };
      try {
        // The credentials a racing write stored stay unless this one replaces them: the record never names a
        // secret that write's own replacement already deleted. (The audit record is staged after this.)
        replaced = await crud.updateFrom(
          id,
          (stored) => {
            const credentials = patch.credential === undefined ? stored.credentials : replacement;
            metadata.credentialConfigured = credentials.length > 0;
            return { ...fields, credentials };
          },
          { action: 'provider.update', actor, requestId, metadata },
        );
      } catch (err) {
        // A removal that committed first (NOT_FOUND) leaves no secret behind for a provider that is gone.
        await deleteRefs(vault, replacement, true);
        throw err;
      }
      const { previous, record: next } = replaced;
      byId.set(id, next);
      await onChange(id, next);
      // The old secrets go only once nothing refers to them any more: the ones the store held, which a racing
      // write may have replaced since this one read `current`.
      await deleteRefs(vault, droppedCredentials(previous, next));
      const reachChanged =
        baseUrl !== current.baseUrl || firstUsableRef(next) !== firstUsableRef(current) || patch.hints !== undefined;
      if (wantsList(next) && (reachChanged || !wantsList(current))) refreshInBackground(id);
      return next;
    },

    async remove(id, actor, requestId) {
      const current = mustGet(id);
      checkNoModels(models, id);
      const forget = deps.forgetProvider?.(id);
      removing.add(id);
      let removed: ProviderRecord;
      try {
        removed = await crud.remove(
          id,
          { action: 'provider.delete', actor, requestId, metadata: { kind: current.kind } },
          () => {
            models.stageListing(id, null);
            forget?.();
          },
        );
      } finally {
        removing.delete(id);
      }
      byId.delete(id);
      await onChange(id, null, null);
      // The credentials as stored: a write that committed after this removal read `current` replaced them.
      await deleteRefs(vault, removed.credentials);
    },
  };
}

function checkNewId(id: string, byId: ReadonlyMap<string, ProviderRecord>): void {
  if (!PROVIDER_ID.test(id)) {
    throw new ServiceError(
      'INVALID_REQUEST',
      'A provider `id` is lower-case letters, digits and dashes (at most 63).',
      {
        param: 'id',
      },
    );
  }
  if (byId.has(id)) throw new ServiceError('CONFLICT', `A provider with ID \`${id}\` already exists.`, { param: 'id' });
}

function checkPatch(
  current: ProviderRecord,
  patch: ProviderUpdate,
  ownPort: number | null,
  mayRedirect: boolean,
): { baseUrl: ProviderRecord['baseUrl']; hints: ProviderRecord['hints'] } {
  const baseUrl = patch.baseUrl === undefined ? current.baseUrl : checkBaseUrl(current.kind, patch.baseUrl);
  if (patch.baseUrl !== undefined) checkNotOwnListener(baseUrl, ownPort);
  checkCredentialRedirect({
    hasCredential: current.credentials.length > 0,
    before: current.baseUrl,
    after: baseUrl,
    suppliesCredential: patch.credential !== undefined,
    mayRedirect,
    param: 'baseUrl',
  });
  const hints = patch.hints === undefined ? current.hints : checkHints(current.kind, patch.hints);
  checkCredential(current.kind, patch.credential);
  return { baseUrl, hints };
}

function checkNoModels(models: ModelRepo, id: string): void {
  const owned = models.all().filter((m) => m.providerId === id).length;
  if (owned > 0) {
    throw new ServiceError(
      'CONFLICT',
      `Provider \`${id}\` still has ${owned} catalog model record(s); delete them first.`,
      {
        param: 'id',
        details: { modelRecords: owned },
      },
    );
  }
}

function newRecord(
  input: ProviderCreate,
  o: {
    id: string;
    baseUrl: ProviderRecord['baseUrl'];
    hints: ProviderRecord['hints'];
    credentials: ProviderRecord['credentials'];
    now: number;
  },
): ProviderRecord {
  return {
    id: o.id,
    kind: input.kind,
    displayName: input.displayName ?? o.id,
    baseUrl: o.baseUrl,
    enabled: input.enabled ?? true,
    autoProxyModels: input.autoProxyModels ?? true,
    credentials: o.credentials,
    hints: o.hints,
    timeouts: { ...DEFAULT_TIMEOUTS, ...input.timeouts },
    createdAt: o.now,
    updatedAt: o.now,
  };
}

function patchedFields(
  current: ProviderRecord,
  patch: ProviderUpdate,
  o: { baseUrl: ProviderRecord['baseUrl']; hints: ProviderRecord['hints']; now: number },
): Omit<ProviderRecord, 'credentials'> {
  return {
    ...current,
    displayName: patch.displayName ?? current.displayName,
    baseUrl: o.baseUrl,
    enabled: patch.enabled ?? current.enabled,
    autoProxyModels: patch.autoProxyModels ?? current.autoProxyModels,
    hints: o.hints,
    timeouts: { ...current.timeouts, ...patch.timeouts },
    updatedAt: o.now,
  };
}
