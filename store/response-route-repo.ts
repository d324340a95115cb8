import { createRouteWrites, type RouteWrites } from '../state/route-writes.ts';
import type { StoreEnv } from './env.ts';
import { boundedKey } from './keys.ts';

// Which provider created a styleA response, so that GET/DELETE/cancel/input_items by its ID reach the same
// provider. Only the ID and the provider: never content. The ID is the upstream's, of any length: it is
// keyed through boundedKey.

interface ResponseRoute {
  providerId: string;
  createdAt: number;
}

const KEEP_MS = 30 * 24 * 3600_000;
/** How long a miss waits for another thread's route writes to commit (lmdb commits in milliseconds). */
const FIND_WAIT_MS = 2000;

export interface ResponseRouteRepo {
  providerOf(responseId: string): string | undefined;
  /**
   * providerOf, and on a miss while a route is being written on another thread (state/route-writes.ts), reads
   * again as those writes end, for up to `waitMs`.
   */
  find(responseId: string, waitMs?: number): Promise<string | undefined>;
  /**
   * Best effort: not part of any acknowledged write. The route is readable at once; the promise settles
   * with its commit and rejects (never throws) when it could not be stored, for the caller to log.
   */
  remember(responseId: string, providerId: string): Promise<void>;
  /** Drops routes older than 30 days (providers keep stored responses for 30 days). */
  prune(now?: number): Promise<void>;
}

/** `writes`: shared by every thread's repo over the same store (edge threads, the main thread). */
export function responseRouteRepo(env: StoreEnv, writes: RouteWrites = createRouteWrites()): ResponseRouteRepo {
  const db = env.db<ResponseRoute>('response-routes');
  // lmdb commits a put asynchronously and reads see it only once committed; a client that names the
  // response as soon as it has it must still reach its provider, so routes are readable from memory until then.
  const pending = new Map<string, string>();
  function providerOf(id: string): string | undefined {
    const key = boundedKey(id);
    return pending.get(key) ?? db.get(key)?.providerId;
  }
  return {
    providerOf,
    async find(id, waitMs = FIND_WAIT_MS) {
      const deadline = Date.now() + waitMs;
      let found = providerOf(id);
      while (found === undefined && (await writes.changed(Math.max(0, deadline - Date.now())))) {
        // The commit is another thread's: this thread's read snapshot may predate it.
        db.resetReadTxn();
        found = providerOf(id);
      }
      return found;
    },
    async remember(id, providerId) {
      // A call can end while the service shuts down, after the store closed.
      if (!env.isOpen()) throw new Error('The store is closed; the response route was not kept.');
      const key = boundedKey(id);
      pending.set(key, providerId);
      writes.begin();
      try {
        await db.put(key, { providerId, createdAt: Date.now() });
      } finally {
        writes.end();
        if (pending.get(key) === providerId) pending.delete(key);
      }
    },
    async prune(now = Date.now()) {
      const old = [
        ...db
          .getRange()
          .filter(({ value }) => now - value.createdAt > KEEP_MS)
          .map(({ key }) => key),
      ];
      if (old.length > 0) await db.transaction(() => old.forEach((k) => db.remove(k)));
    },
  };
}
