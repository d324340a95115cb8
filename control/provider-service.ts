import type { Logger } from 'pino';
import { PROVIDER_ID, DEFAULT_TIMEOUTS, type UpstreamModelList } from '../protocol/providers.ts';
import { ServiceError, toServiceError } from '../protocol/errors.ts';
import type { CredentialPoolState, ProviderView } from '../protocol/http/providers.ts';
import type { ProviderTarget } from '../protocol/messages.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { ModelListCache, ModelRepo } from '../store/model-repo.ts';
import type { ProviderRecord, ProviderRepo } from '../store/provider-repo.ts';
import type { Vault } from '../store/vault/index.ts';
import { auditedCrud } from './crud.ts';
import type { EventBus } from './events.ts';
import {
  credentialWrites,
  defaultCredential,
  deleteRefs,
  droppedCredentials,
  firstUsableRef,
} from './provider-credentials.ts';
import { checkCredentialRedirect } from './credential-redirect.ts';
import { createProviderRefresh } from './provider-refresh.ts';
import {
  checkBaseUrl,
  checkCredential,
  checkHints,
  checkNotOwnListener,
  defaultProviderId,
} from './provider-validation.ts';
import { MAX_LISTED_MODELS, truncated } from '../protocol/providers.ts';
import { type CredentialRecord, targetOf } from '../protocol/catalog.ts';

import type { ProvidersPort, TestOutcome } from '../protocol/ports/providers.ts';

export { MAX_LISTED_MODELS, targetOf, truncated };

/** Lists a provider's models off the main thread (the proxy pool), reading the credential there. */
export type ModelLister = (target: ProviderTarget, credentialRef: string | null) => Promise<UpstreamModelList>;

/** The port the routes reach (protocol/ports/providers.ts), with the answers this service gives at once. */
export interface ProviderService extends ProvidersPort {
  list(): ProviderView[];
  get(id: string): ProviderView;
  record(id: string): ProviderRecord | undefined;
  /** The provider holding credential `credentialId`, if any does (a limit's scope names it). */
  credentialOwner(credentialId: string): string | undefined;
  /** Refreshes, in the background, every auto-proxying provider whose list is older than the TTL. */
  refreshStale(): void;
  /** Resolves once no model list refresh is running (each has committed its list and told the catalog). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export type { TestOutcome };

interface Deps {
  env: StoreEnv;
  providers: ProviderRepo;
  models: ModelRepo;
  audit: AuditRepo;
  vault: Vault;
  lister: ModelLister;
  /**
   * After a commit that changed provider `id`: its record now (null: deleted) and, when its model list
   * changed too, that list (null: dropped). The catalog updates that provider's entries only. It may answer a
   * promise: the write answers once that settles (every edge thread's catalog has the change).
   */
  onChange(id: string, provider: ProviderRecord | null, listing?: ModelListCache | null): unknown;
  log: Logger;
  /** Where `credential.rejected` is announced. */
  bus: Pick<EventBus, 'publish'>;
  /** What the key pool knows of a key now (edge/gateway/key-pool.ts, over the table every thread shares). */
  live?(credential: CredentialRecord): CredentialPoolState;
  /** The port this service listens on (null before it does): no provider may point there. */
  ownPort?(): number | null;
  /** What else goes with a deleted provider (its live-header readings): found now, staged in the delete's commit. */
  forgetProvider?(id: string): () => void;
  listTtlMs?: number;
}

export function toProviderView(r: ProviderRecord): ProviderView {
  return {
    id: r.id,
    kind: r.kind,
    displayName: r.displayName,
    baseUrl: r.baseUrl,
    enabled: r.enabled,
    autoProxyModels: r.autoProxyModels,
    credentialConfigured: r.credentials.length > 0,
    credentials: r.credentials.length,
    hints: { ...r.hints },
    timeouts: { ...r.timeouts },
    createdAt: new Date(r.createdAt).toISOString(),
    updatedAt: new Date(r.updatedAt).toISOString(),
  };
}

// Over 80 lines as a closure of short methods over one state, the shape of every control service here.
export function createProviderService(deps: Deps): ProviderService {
  const { env, providers, models, audit, vault, lister, onChange, log } = deps;
  const byId = new Map(providers.all().map((r) => [r.id, r]));
  const ownPort = () => deps.ownPort?.() ?? null;
  const notFound = (id: string) =>
    new ServiceError('NOT_FOUND', `No provider with ID \`${id.slice(0, 100)}\`.`, { param: 'id' });
  const crud = auditedCrud<ProviderRecord>({
    env,
    audit,
    resourceType: 'provider',
    repo: providers,
    keyOf: (r) => r.id,
    notFound,
  });
  /** Providers whose removal has started: an update no longer stores a credential for one. */
  const removing = new Set<string>();

  const mustGet = (id: string): ProviderRecord => {
    const r = byId.get(id);
    if (!r) throw notFound(id);
    return r;
  };

  /** A record stored before the listener check, or a port changed since, still never lists itself. */
  function listFrom(r: ProviderRecord): Promise<UpstreamModelList> {
    checkNotOwnListener(r.baseUrl, ownPort());
    return lister(targetOf(r), firstUsableRef(r));
  }

  const lists = createProviderRefresh({
    env,
    models,
    log,
    ttl: deps.listTtlMs ?? 15 * 60_000,
    mustGet,
    current: (id) => byId.get(id),
    all: () => byId.values(),
    listFrom,
    onListing: (id, provider, listing) => onChange(id, provider, listing),
  });
  const { wantsList, refreshInBackground } = lists;

  const credentials = credentialWrites({
    crud,
    vault,
    bus: deps.bus,
    mustGet,
    removing: (id) => removing.has(id),
    notFound,
    async committed(previous, next) {
      byId.set(next.id, next);
      await onChange(next.id, next);
      const ref = firstUsableRef(next);
      if (ref !== null && ref !== firstUsableRef(previous) && wantsList(next)) refreshInBackground(next.id);
    },
  });

  const service: ProviderService = {
    ...credentials,
    // The key pool's figures live in a table every thread shares; this thread reads it too.
    livePool(providerId) {
      const record = byId.get(providerId);
      if (record === undefined || deps.live === undefined) return undefined;
      return new Map(record.credentials.map((c) => [c.id, deps.live!(c)]));
    },
    credentialOwner(credentialId) {
      for (const r of byId.values()) if (r.credentials.some((c) => c.id === credentialId)) return r.id;
      return undefined;
    },
    list: () =>
      [...byId.values()].sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id)).map(toProviderView),
    get: (id) => toProviderView(mustGet(id)),
    record: (id) => byId.get(id),

    async create(input, actor, requestId) {
      const id = input.id ?? defaultProviderId(input.kind);
      if (!PROVIDER_ID.test(id)) {
        throw new ServiceError(
          'INVALID_REQUEST',
          'A provider `id` is lower-case letters, digits and dashes (at most 63).',
          { param: 'id' },
        );
      }
      if (byId.has(id))
        throw new ServiceError('CONFLICT', `A provider with ID \`${id}\` already exists.`, { param: 'id' });
      const baseUrl = checkBaseUrl(input.kind, input.baseUrl);
      checkNotOwnListener(baseUrl, ownPort());
      const hints = checkHints(input.kind, input.hints);
      checkCredential(input.kind, input.credential);
      const now = Date.now();
      const credentials = input.credential === undefined ? [] : [await defaultCredential(vault, input.credential, now)];
      const record: ProviderRecord = {
        id,
        kind: input.kind,
        displayName: input.displayName ?? id,
        baseUrl,
        enabled: input.enabled ?? true,
        autoProxyModels: input.autoProxyModels ?? true,
        credentials,
        hints,
        timeouts: { ...DEFAULT_TIMEOUTS, ...input.timeouts },
        createdAt: now,
        updatedAt: now,
      };
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
      return toProviderView(record);
    },

    async update(id, patch, actor, requestId, mayRedirect) {
      const current = mustGet(id);
      const baseUrl = patch.baseUrl === undefined ? current.baseUrl : checkBaseUrl(current.kind, patch.baseUrl);
      if (patch.baseUrl !== undefined) checkNotOwnListener(baseUrl, ownPort());
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
      if (removing.has(id)) throw notFound(id);
      const now = Date.now();
      // `credential` replaces every key the provider holds by this one (or, null, removes them all).
      const replacement =
        typeof patch.credential === 'string' ? [await defaultCredential(vault, patch.credential, now)] : [];
      const fields: Omit<ProviderRecord, 'credentials'> = {
        ...current,
        displayName: patch.displayName ?? current.displayName,
        baseUrl,
        enabled: patch.enabled ?? current.enabled,
        autoProxyModels: patch.autoProxyModels ?? current.autoProxyModels,
        hints,
        timeouts: { ...current.timeouts, ...patch.timeouts },
        updatedAt: now,
      };
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
      return toProviderView(next);
    },

    async remove(id, actor, requestId) {
      const current = mustGet(id);
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

    async test(id, actor, requestId) {
      const r = mustGet(id);
      const started = performance.now();
      let outcome: TestOutcome;
      try {
        const listed = await listFrom(r);
        outcome = {
          ok: true,
          latencyMs: Math.round(performance.now() - started),
          modelCount: listed.models.length,
          error: null,
        };
      } catch (err) {
        const e = toServiceError(err);
        outcome = {
          ok: false,
          latencyMs: Math.round(performance.now() - started),
          modelCount: null,
          error: { code: e.code, message: e.message, details: e.details },
        };
      }
      await crud.commit(id, {
        action: 'provider.test',
        actor,
        requestId,
        metadata: { ok: outcome.ok, code: outcome.error?.code ?? null },
      });
      return outcome;
    },

    async refreshModels(id, actor, requestId) {
      mustGet(id);
      const { listing, failure } = await lists.fetchListing(id);
      if (actor !== null && byId.has(id)) {
        await crud.commit(id, {
          action: 'provider.refresh-models',
          actor,
          requestId,
          metadata: { ok: failure === null, modelCount: listing.models.length },
        });
      }
      if (failure) throw failure;
      return listing;
    },

    refreshStale: () => lists.refreshStale(),
    idle: () => lists.idle(),
    close: () => lists.close(),
  };
  return service;
}
