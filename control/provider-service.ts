import type { Logger } from 'pino';
import type { UpstreamModelList } from '../protocol/providers.ts';
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
import { credentialWrites, firstUsableRef } from './provider-credentials.ts';
import { createProviderRefresh } from './provider-refresh.ts';
import { checkNotOwnListener, defaultProviderId } from './provider-validation.ts';
import { providerWrites } from './provider-writes.ts';
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

const notFound = (id: string) =>
  new ServiceError('NOT_FOUND', `No provider with ID \`${id.slice(0, 100)}\`.`, { param: 'id' });

export function createProviderService(deps: Deps): ProviderService {
  const { env, providers, models, audit, vault, lister, onChange, log } = deps;
  const byId = new Map(providers.all().map((r) => [r.id, r]));
  const ownPort = () => deps.ownPort?.() ?? null;
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

  const writes = providerWrites({
    crud,
    vault,
    models,
    byId,
    removing,
    mustGet,
    notFound,
    ownPort,
    onChange,
    wantsList,
    refreshInBackground,
    forgetProvider: deps.forgetProvider,
    defaultId: defaultProviderId,
  });

  return {
    ...credentials,
    // The key pool's figures live in a table every thread shares; this thread reads it too.
    livePool: (providerId) => livePoolOf(byId.get(providerId), deps.live),
    credentialOwner: (credentialId) => credentialOwnerIn(byId.values(), credentialId),
    list: () =>
      [...byId.values()].sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id)).map(toProviderView),
    get: (id) => toProviderView(mustGet(id)),
    record: (id) => byId.get(id),

    create: async (input, actor, requestId) => toProviderView(await writes.create(input, actor, requestId)),
    update: async (id, patch, actor, requestId, mayRedirect) =>
      toProviderView(await writes.update(id, patch, actor, requestId, mayRedirect)),
    remove: (id, actor, requestId) => writes.remove(id, actor, requestId),

    async test(id, actor, requestId) {
      const r = mustGet(id);
      const outcome = await testListing(() => listFrom(r));
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
}

/** Lists a provider's models once, timed: what POST /v1/providers/{id}/test answers. */
async function testListing(listFrom: () => Promise<UpstreamModelList>): Promise<TestOutcome> {
  const started = performance.now();
  try {
    const listed = await listFrom();
    return {
      ok: true,
      latencyMs: Math.round(performance.now() - started),
      modelCount: listed.models.length,
      error: null,
    };
  } catch (err) {
    const e = toServiceError(err);
    return {
      ok: false,
      latencyMs: Math.round(performance.now() - started),
      modelCount: null,
      error: { code: e.code, message: e.message, details: e.details },
    };
  }
}

function livePoolOf(
  record: ProviderRecord | undefined,
  live: Deps['live'],
): Map<string, CredentialPoolState> | undefined {
  if (record === undefined || live === undefined) return undefined;
  return new Map(record.credentials.map((c) => [c.id, live(c)]));
}

function credentialOwnerIn(records: Iterable<ProviderRecord>, credentialId: string): string | undefined {
  for (const r of records) if (r.credentials.some((c) => c.id === credentialId)) return r.id;
  return undefined;
}
