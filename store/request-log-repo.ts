import { encodeTime } from '../protocol/ids.ts';
import type {
  RequestLogEntry,
  RequestLogFilter,
  RequestLogItem,
  RequestLogPage,
} from '../protocol/http/request-log.ts';
import type { RequestLogSink } from '../protocol/ports/request-log.ts';
import type { StoreEnv } from './env.ts';

// The request log (docs/api.md, Request log): one entry per relayed gateway call, keyed by its request ID, which
// is ours (never a client's) and sorts by the call's start, so the first keys are the oldest and a time range is a
// key range. Every thread that serves calls writes here itself (LMDB serializes the writers across threads); the
// byte total is a record of its own, read and written in each writer's transaction, so the bound holds whichever
// thread writes. Each entry is committed on its own as its call ends: a crash loses at most the ones in flight.

const PREFIX = 'req_';
const TOTAL = 'total';
/** Index rows a list page reads at most: a filter that matches little answers a cursor instead of scanning on. */
const SCAN_MAX = 20_000;
const DAY_MS = 86_400_000;

export interface RequestLogBounds {
  maxBytes: number;
  retentionDays: number;
}

interface IndexRow {
  item: RequestLogItem;
  /** The entry's size as counted against maxBytes. */
  bytes: number;
}

export interface RequestLogRepo {
  /** Stores `entry` and drops the oldest entries until both bounds hold again; settles once committed. */
  append(entry: RequestLogEntry, bounds: RequestLogBounds): Promise<void>;
  list(filter: RequestLogFilter): RequestLogPage;
  get(id: string): RequestLogEntry | undefined;
  /** Drops what the bounds no longer allow (the periodic prune); resolves with the entries dropped. */
  prune(bounds: RequestLogBounds): Promise<number>;
  /** The bytes counted against maxBytes now. */
  totalBytes(): number;
}

/** What an entry counts: its bodies' bytes and the rest as JSON, near what msgpack stores. */
export function entryBytes(entry: RequestLogEntry): number {
  const text = (t: string | null) => (t === null ? 0 : Buffer.byteLength(t));
  const { request, response, ...rest } = entry;
  return (
    text(request.body.text) +
    text(response.body.text) +
    Buffer.byteLength(JSON.stringify([rest, request.headers, response.headers]))
  );
}

/** The entry without its bodies' text, for one that alone exceeds the whole bound. */
function withoutBodies(entry: RequestLogEntry): RequestLogEntry {
  const drop = (b: RequestLogEntry['request']['body']) => ({
    ...b,
    text: null,
    truncated: b.text !== null || b.truncated,
  });
  return {
    ...entry,
    request: { ...entry.request, body: drop(entry.request.body) },
    response: { ...entry.response, body: drop(entry.response.body) },
  };
}

const itemOf = (entry: RequestLogEntry): RequestLogItem => {
  const { query: _q, request: _rq, response: _rs, error: _e, ...item } = entry;
  return item;
};

export function requestLogRepo(env: StoreEnv, now: () => number = Date.now): RequestLogRepo {
  const entries = env.db<RequestLogEntry>('request-log');
  const index = env.db<IndexRow>('request-log-index');
  const meta = env.db<number>('request-log-meta');

  /** Inside a write transaction: removes the oldest entries while either bound is broken; answers how many. */
  function dropOldest(bounds: RequestLogBounds, keep: string | null): number {
    let total = meta.get(TOTAL) ?? 0;
    const cutoff = now() - bounds.retentionDays * DAY_MS;
    let dropped = 0;
    for (const { key, value } of index.getRange({ start: PREFIX, end: `${PREFIX}~` })) {
      if (total <= bounds.maxBytes && Date.parse(value.item.receivedAt) >= cutoff) break;
      if (key === keep) continue;
      entries.remove(key);
      index.remove(key);
      total -= value.bytes;
      dropped++;
    }
    meta.put(TOTAL, Math.max(0, total));
    return dropped;
  }

  return {
    async append(entry, bounds) {
      if (!env.isOpen()) throw new Error('The store is closed; the request log entry was not kept.');
      let stored = entry;
      let bytes = entryBytes(entry);
      if (bytes > bounds.maxBytes) {
        stored = withoutBodies(entry);
        bytes = entryBytes(stored);
      }
      await env.root.transaction(() => {
        const before = index.get(stored.id);
        meta.put(TOTAL, (meta.get(TOTAL) ?? 0) + bytes - (before?.bytes ?? 0));
        entries.put(stored.id, stored);
        index.put(stored.id, { item: itemOf(stored), bytes });
        dropOldest(bounds, stored.id);
      });
    },
    list(f) {
      // Another thread's commits may postdate this thread's read snapshot (edge threads write their own entries).
      index.resetReadTxn();
      const start = f.cursor ?? (f.to === undefined ? `${PREFIX}~` : `${PREFIX}${encodeTime(f.to)}~`);
      const end = f.from === undefined ? PREFIX : PREFIX + encodeTime(f.from);
      const data: RequestLogItem[] = [];
      let scanned = 0;
      let last: string | null = null;
      for (const { key, value } of index.getRange({ start, end, reverse: true })) {
        if (key === f.cursor) continue;
        if (++scanned > SCAN_MAX) return { data, nextCursor: last };
        last = key;
        const item = value.item;
        if (f.session !== undefined && item.session !== f.session) continue;
        if (f.model !== undefined && item.clientModel !== f.model && item.modelId !== f.model) continue;
        if (f.outcome !== undefined && item.outcome !== f.outcome) continue;
        if (f.status !== undefined && item.status !== f.status) continue;
        // One match past the page says that there is a next one.
        if (data.length === f.limit) return { data, nextCursor: data.at(-1)!.id };
        data.push(item);
      }
      return { data, nextCursor: null };
    },
    get(id) {
      entries.resetReadTxn();
      return entries.get(id);
    },
    async prune(bounds) {
      if (!env.isOpen()) return 0;
      return env.root.transaction(() => dropOldest(bounds, null));
    },
    totalBytes: () => meta.get(TOTAL) ?? 0,
  };
}

/** The settings a thread's sink reads per call. */
export interface RequestLogSettings {
  enabled: boolean;
  tokenIds: readonly string[];
  retentionDays: number;
  maxMegabytes: number;
}

/** A thread's writer of entries: the on-check for each call, and writes whose failures are logged, never thrown. */
export function requestLogSink(
  repo: RequestLogRepo,
  settings: () => RequestLogSettings | null,
  onFailure: (err: unknown) => void,
): RequestLogSink {
  // The token list as a set, rebuilt only when the settings object changes.
  let seen: RequestLogSettings | null = null;
  let tokens = new Set<string>();
  return {
    on(tokenId) {
      const s = settings();
      if (s === null) return false;
      if (s.enabled) return true;
      if (s !== seen) {
        seen = s;
        tokens = new Set(s.tokenIds);
      }
      return tokens.has(tokenId);
    },
    write(entry) {
      const s = settings();
      if (s === null) return;
      repo.append(entry, { maxBytes: s.maxMegabytes * 1024 * 1024, retentionDays: s.retentionDays }).catch(onFailure);
    },
  };
}
