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

export interface ResponseRouteRepo {
  providerOf(responseId: string): string | undefined;
  /**
   * Best effort: not part of any acknowledged write. The route is readable at once; the promise settles
   * with its commit and rejects (never throws) when it could not be stored, for the caller to log.
   */
  remember(responseId: string, providerId: string): Promise<void>;
  /** Drops routes older than 30 days (providers keep stored responses for 30 days). */
  prune(now?: number): Promise<void>;
}

export function responseRouteRepo(env: StoreEnv): ResponseRouteRepo {
  const db = env.db<ResponseRoute>('response-routes');
  // lmdb commits a put asynchronously and reads see it only once committed; a client that names the
  // response as soon as it has it must still reach its provider, so routes are readable from memory until then.
  const pending = new Map<string, string>();
  return {
    providerOf(id) {
      const key = boundedKey(id);
      return pending.get(key) ?? db.get(key)?.providerId;
    },
    async remember(id, providerId) {
      // A call can end while the service shuts down, after the store closed.
      if (!env.isOpen()) throw new Error('The store is closed; the response route was not kept.');
      const key = boundedKey(id);
      pending.set(key, providerId);
      try {
        await db.put(key, { providerId, createdAt: Date.now() });
      } finally {
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
