import { directModelId } from '../protocol/http/catalog.ts';
import type { ModelListCache, UpstreamModel } from '../protocol/providers.ts';
import type { ModelRecord, ProviderRecord } from '../protocol/catalog.ts';
import {
  autoEntry,
  byModelId,
  explicitEntry,
  listsAutoModels,
  routable,
  type Catalog,
  type CatalogModel,
} from '../protocol/catalog-entries.ts';
import { createFollowers, type Follower } from './followers.ts';

// Each catalog write used to rebuild every entry from a fresh read of the store (3.4 ms a create at 50 models,
// 31.7 ms at 6,400, the event loop held all the while, /health waiting up to 714 ms). The index changes only
// what a write touches: one entry for a model record; one provider's own entries for a provider or its list.
// The two sorted lists are patched where they change (binary search and splice), copied first only when a
// reader was handed them since the last change, so no caller sees a list it holds change under it.

export interface CatalogIndex extends Catalog {
  /** The explicit record of `id`, if there is one. */
  record(id: string): ModelRecord | undefined;
  /** A model record was written (created or replaced). */
  putRecord(record: ModelRecord): void;
  removeRecord(id: string): void;
  /**
   * A provider changed: `provider` is its record now (null once deleted), `listing` its model list when that
   * changed too (null once dropped; undefined: unchanged). Only that provider's entries are recomputed.
   */
  putProvider(id: string, provider: ProviderRecord | null, listing?: ModelListCache | null): void;
  /**
   * Calls `listener` with what the index is built from now, then with each change made to it: what another
   * thread's copy (createCatalogMirror) needs to stay equal to this one. A listener may answer a promise (the
   * other thread's acknowledgement), which `settled` waits for. Returns the unsubscribe.
   */
  follow(listener: Follower<CatalogChange>): () => void;
  /** Settles once every follower has acknowledged the changes told so far: a write answers after it. */
  settled(): Promise<void>;
}

/** What a catalog is built from: the provider records, the explicit model records and each provider's list. */
export interface CatalogState {
  providers: ProviderRecord[];
  records: ModelRecord[];
  listings: [string, ModelListCache][];
}

/** A whole catalog's inputs, or one write as the index's own methods take it. */
export type CatalogChange =
  | { whole: CatalogState }
  | { putRecord: ModelRecord }
  | { removeRecord: string }
  | { putProvider: { id: string; provider: ProviderRecord | null; listing?: ModelListCache | null } };

/** A list sorted by model ID, and whether a reader holds it (then the next change works on a copy). */
interface Sorted {
  items: CatalogModel[];
  shared: boolean;
}

/** Where `id` is in `items`, or `-(where it would go) - 1`. */
function search(items: readonly CatalogModel[], id: string): number {
  let lo = 0;
  let hi = items.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = items[mid]!.id;
    if (at < id) lo = mid + 1;
    else if (at > id) hi = mid - 1;
    else return mid;
  }
  return -lo - 1;
}

/** Puts `next` at `id`'s place in the list, or takes `id` out when `next` is undefined. */
function patch(list: Sorted, id: string, next: CatalogModel | undefined): void {
  const at = search(list.items, id);
  if (at < 0 && next === undefined) return;
  if (list.shared) {
    list.items = list.items.slice();
    list.shared = false;
  }
  if (at >= 0) {
    if (next === undefined) list.items.splice(at, 1);
    else list.items[at] = next;
  } else list.items.splice(-at - 1, 0, next!);
}

/** The list without `providerId`'s entries, with `fresh` (sorted, all of that provider) merged in. */
function replaceProvider(list: Sorted, providerId: string, fresh: readonly CatalogModel[]): Sorted {
  const rest = list.items.filter((m) => m.providerId !== providerId);
  const out: CatalogModel[] = [];
  let i = 0;
  let j = 0;
  while (i < rest.length && j < fresh.length) out.push(byModelId(rest[i]!, fresh[j]!) < 0 ? rest[i++]! : fresh[j++]!);
  while (i < rest.length) out.push(rest[i++]!);
  while (j < fresh.length) out.push(fresh[j++]!);
  return { items: out, shared: false };
}

/** A provider's reported models by upstream ID, the first report of an ID kept. */
function listedById(listing: ModelListCache | null | undefined): Map<string, UpstreamModel> {
  const out = new Map<string, UpstreamModel>();
  for (const m of listing?.models ?? []) if (!out.has(m.upstreamModelId)) out.set(m.upstreamModelId, m);
  return out;
}

/** The explicit model records, by ID, by provider and by alias. */
function recordIndex() {
  const records = new Map<string, ModelRecord>();
  const recordsOf = new Map<string, Set<string>>();
  const aliases = new Map<string, string>();
  return {
    records,
    recordsOf,
    aliases,
    add(r: ModelRecord): void {
      records.set(r.id, r);
      let own = recordsOf.get(r.providerId);
      if (!own) recordsOf.set(r.providerId, (own = new Set()));
      own.add(r.id);
      for (const alias of r.aliases) aliases.set(alias, r.id);
    },
    remove(r: ModelRecord): void {
      records.delete(r.id);
      recordsOf.get(r.providerId)?.delete(r.id);
      for (const alias of r.aliases) if (aliases.get(alias) === r.id) aliases.delete(alias);
    },
  };
}

/** Every ID the catalog may hold: each record's and each listed model's direct ID. */
function candidateIds(
  records: ReadonlyMap<string, ModelRecord>,
  listed: ReadonlyMap<string, ReadonlyMap<string, UpstreamModel>>,
): Set<string> {
  const candidates = new Set<string>(records.keys());
  for (const [providerId, reports] of listed)
    for (const up of reports.keys()) candidates.add(directModelId(providerId, up));
  return candidates;
}

/** The upstream IDs of `providerId`'s entries, now or after a change: its records' and what it lists. */
function upstreamIdsOf(
  providerId: string,
  { records, recordsOf }: Pick<ReturnType<typeof recordIndex>, 'records' | 'recordsOf'>,
  listed: ReadonlyMap<string, Map<string, UpstreamModel>>,
): Set<string> {
  const ids = new Set<string>();
  for (const recordId of recordsOf.get(providerId) ?? []) ids.add(records.get(recordId)!.upstreamModelId);
  for (const up of listed.get(providerId)?.keys() ?? []) ids.add(up);
  return ids;
}

/** The whole catalog from what the store holds; writes then keep it current through the index's methods. */
export function buildCatalog(
  providerList: readonly ProviderRecord[],
  recordList: readonly ModelRecord[],
  listings: ReadonlyMap<string, ModelListCache>,
): CatalogIndex {
  const providers = new Map(providerList.map((p) => [p.id, p]));
  const index = recordIndex();
  const { records, aliases } = index;
  const listed = new Map<string, Map<string, UpstreamModel>>();
  const byId = new Map<string, CatalogModel>();
  // Kept only to hand a follower the whole catalog: entries read `listed`.
  const listingOf = new Map(listings);
  const followers = createFollowers<CatalogChange>();
  const tell = (change: CatalogChange) => void followers.tell(change);

  function entryOf(providerId: string, upstreamModelId: string): CatalogModel | undefined {
    const report = listed.get(providerId)?.get(upstreamModelId);
    const record = records.get(directModelId(providerId, upstreamModelId));
    if (record) return explicitEntry(record, report); // an explicit record of the same ID wins
    const provider = providers.get(providerId);
    if (!provider || !report || !listsAutoModels(provider)) return undefined;
    return autoEntry(provider, report) ?? undefined;
  }

  for (const [providerId, listing] of listings) listed.set(providerId, listedById(listing));
  for (const r of recordList) index.add(r);
  for (const id of candidateIds(records, listed)) {
    const slash = id.indexOf('/');
    const entry = entryOf(id.slice(0, slash), id.slice(slash + 1));
    if (entry) byId.set(id, entry);
  }
  const sorted = [...byId.values()].sort(byModelId);
  let all: Sorted = { items: sorted, shared: false };
  let discoverable: Sorted = { items: sorted.filter((m) => routable(m, providers.get(m.providerId))), shared: false };

  /** Recomputes the one entry of `providerId`'s `upstreamModelId`. */
  function refresh(providerId: string, upstreamModelId: string): void {
    const id = directModelId(providerId, upstreamModelId);
    const next = entryOf(providerId, upstreamModelId);
    if (next) byId.set(id, next);
    else byId.delete(id);
    patch(all, id, next);
    patch(discoverable, id, next && routable(next, providers.get(providerId)) ? next : undefined);
  }

  return {
    all() {
      all.shared = true;
      return all.items;
    },
    get: (id) => byId.get(id),
    discoverable() {
      discoverable.shared = true;
      return discoverable.items;
    },
    resolve(name) {
      const model = byId.get(name) ?? byId.get(aliases.get(name) ?? '');
      if (!model) return null;
      const provider = providers.get(model.providerId);
      return routable(model, provider) ? { model, provider } : null;
    },
    aliasOwner: (alias) => aliases.get(alias),
    provider: (id) => providers.get(id),
    providerIds: () => [...providers.keys()],
    slotsOf: (id) => listingOf.get(id)?.slots ?? null,
    record: (id) => records.get(id),

    follow(listener) {
      listener({
        whole: { providers: [...providers.values()], records: [...records.values()], listings: [...listingOf] },
      });
      return followers.add(listener);
    },

    settled: () => followers.settled(),

    putRecord(record) {
      tell({ putRecord: record });
      const previous = records.get(record.id);
      if (previous) index.remove(previous);
      index.add(record);
      refresh(record.providerId, record.upstreamModelId);
    },

    removeRecord(id) {
      tell({ removeRecord: id });
      const previous = records.get(id);
      if (!previous) return;
      index.remove(previous);
      // The provider's auto model of the same ID, if it lists one, comes back.
      refresh(previous.providerId, previous.upstreamModelId);
    },

    putProvider(id, provider, listing) {
      tell({ putProvider: listing === undefined ? { id, provider } : { id, provider, listing } });
      if (listing === null) listingOf.delete(id);
      else if (listing !== undefined) listingOf.set(id, listing);
      // Every entry this provider has now or may have after: its records, what it listed, what it lists.
      const upstreamIds = upstreamIdsOf(id, index, listed);
      if (provider) providers.set(id, provider);
      else providers.delete(id);
      if (listing !== undefined) {
        if (listing === null) listed.delete(id);
        else listed.set(id, listedById(listing));
      }
      for (const up of listed.get(id)?.keys() ?? []) upstreamIds.add(up);
      const fresh: CatalogModel[] = [];
      for (const up of upstreamIds) {
        const entry = entryOf(id, up);
        if (entry) {
          byId.set(entry.id, entry);
          fresh.push(entry);
        } else byId.delete(directModelId(id, up));
      }
      fresh.sort(byModelId);
      all = replaceProvider(all, id, fresh);
      discoverable = replaceProvider(discoverable, id, provider ? fresh.filter((m) => routable(m, provider)) : []);
    },
  };
}

/** A catalog kept equal to another thread's from the changes it follows: what an edge thread resolves against. */
export interface CatalogMirror {
  current(): Catalog;
  apply(change: CatalogChange): void;
}

export function createCatalogMirror(): CatalogMirror {
  let index = buildCatalog([], [], new Map());
  return {
    current: () => index,
    apply(change) {
      if ('whole' in change) {
        const { providers, records, listings } = change.whole;
        index = buildCatalog(providers, records, new Map(listings));
      } else if ('putRecord' in change) index.putRecord(change.putRecord);
      else if ('removeRecord' in change) index.removeRecord(change.removeRecord);
      else index.putProvider(change.putProvider.id, change.putProvider.provider, change.putProvider.listing);
    },
  };
}
