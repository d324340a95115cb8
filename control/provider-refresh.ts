import type { Logger } from 'pino';
import { KINDS, MAX_LISTED_MODELS, truncated, type UpstreamModelList } from '../protocol/providers.ts';
import { type ServiceError, toServiceError } from '../protocol/errors.ts';
import type { StoreEnv } from '../store/env.ts';
import type { ModelListCache, ModelRepo } from '../store/model-repo.ts';
import type { ProviderRecord } from '../store/provider-repo.ts';

// The provider service's model-list refresher: one fetch per provider at a time, its list committed and the
// catalog told, in the background after a write or once a list is older than the TTL, or awaited when a
// client asks for a refresh.

export interface Refreshed {
  listing: ModelListCache;
  failure: ServiceError | null;
}

export interface ProviderRefreshDeps {
  env: StoreEnv;
  models: ModelRepo;
  log: Logger;
  ttl: number;
  /** The provider's record; throws NOT_FOUND for an unknown ID. */
  mustGet(id: string): ProviderRecord;
  /** The provider's record now; undefined once it was deleted. */
  current(id: string): ProviderRecord | undefined;
  all(): Iterable<ProviderRecord>;
  /** Asks the provider for its list (off the main thread). */
  listFrom(r: ProviderRecord): Promise<UpstreamModelList>;
  /** After a list was committed for a provider that still exists (the provider service's onChange). */
  onListing(id: string, provider: ProviderRecord, listing: ModelListCache): void;
}

export type ProviderRefresh = ReturnType<typeof createProviderRefresh>;

// Holds the refreshes under way, one per provider, so that callers arriving meanwhile share one fetch.
export function createProviderRefresh(deps: ProviderRefreshDeps) {
  const { env, models, log, ttl, mustGet } = deps;
  const refreshing = new Map<string, Promise<Refreshed>>();
  let closed = false;
  const wantsList = (r: ProviderRecord) =>
    r.enabled && r.autoProxyModels && KINDS[r.kind].actions.includes('refresh-models');

  return {
    fetchListing,
    wantsList,
    refreshInBackground,
    /** Refreshes, in the background, every auto-proxying provider whose list is older than the TTL. */
    refreshStale(): void {
      const now = Date.now();
      for (const r of deps.all()) {
        if (!wantsList(r) || refreshing.has(r.id)) continue;
        const listing = models.listing(r.id);
        const last = Math.max(listing?.fetchedAt ?? 0, listing?.error?.at ?? 0);
        if (now - last >= ttl) refreshInBackground(r.id);
      }
    },
    idle,
    async close(): Promise<void> {
      closed = true;
      await idle();
    },
  };

  /** One fetch per provider at a time; a caller arriving meanwhile shares it. */
  function fetchListing(id: string): Promise<Refreshed> {
    const running = refreshing.get(id);
    if (running) return running;
    const r = mustGet(id);
    const run = (async () => {
      const previous = models.listing(id) ?? { fetchedAt: null, models: [], error: null };
      const { listing, failure } = await listingOf(deps, r, previous);
      if (deps.current(id) !== undefined) {
        await env.commit(() => models.stageListing(id, listing));
        // Deleted meanwhile: its removal took the list with it.
        const now = deps.current(id);
        if (now) deps.onListing(id, now, listing);
      }
      return { listing, failure };
    })().finally(() => refreshing.delete(id));
    refreshing.set(id, run);
    return run;
  }

  function refreshInBackground(id: string): void {
    if (closed) return;
    fetchListing(id).then(
      ({ failure }) => {
        if (failure) log.warn({ providerId: id, code: failure.code }, 'could not refresh the provider model list');
      },
      (err: unknown) => log.error({ providerId: id, err: String(err) }, 'model list refresh failed'),
    );
  }

  /** Resolves once no model list refresh is running (each has committed its list and told the catalog). */
  async function idle(): Promise<void> {
    while (refreshing.size > 0) await Promise.allSettled([...refreshing.values()]);
  }
}

/** The provider's list now, bounded; on a failure, the last good list with the error. */
async function listingOf(deps: ProviderRefreshDeps, r: ProviderRecord, previous: ModelListCache): Promise<Refreshed> {
  const { log } = deps;
  const id = r.id;
  try {
    const { models: listed, withheld, slots } = await deps.listFrom(r);
    const kept = listed.length > MAX_LISTED_MODELS ? listed.slice(0, MAX_LISTED_MODELS) : listed;
    const listing: ModelListCache = {
      fetchedAt: Date.now(),
      models: kept,
      error: null,
      listedCount: listed.length,
      withheld,
      ...(slots !== undefined && { slots }),
    };
    // Counts only: the IDs left out are the ones that may hold the key.
    if (withheld > 0)
      log.warn(
        { providerId: id, withheld },
        'the provider listed models whose ID or name held its credential; they were left out',
      );
    if (truncated(listing))
      log.warn(
        { providerId: id, listedCount: listed.length, kept: kept.length },
        'the provider listed more models than one provider may add; the rest were left out',
      );
    return { listing, failure: null };
  } catch (err) {
    const failure = toServiceError(err);
    // A failed refresh keeps the last good list.
    return {
      listing: { ...previous, error: { code: failure.code, message: failure.message, at: Date.now() } },
      failure,
    };
  }
}
