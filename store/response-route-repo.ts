import type { StoreEnv } from './env.ts';

// Which provider created a styleA response, so that GET/DELETE/cancel/input_items by its ID reach the same
// provider. Only the ID and the provider: never content.

interface ResponseRoute {
  providerId: string;
  createdAt: number;
}

const KEEP_MS = 30 * 24 * 3600_000;

export interface ResponseRouteRepo {
  providerOf(responseId: string): string | undefined;
  /** Best effort: not part of any acknowledged write. */
  remember(responseId: string, providerId: string): void;
  /** Drops routes older than 30 days (providers keep stored responses for 30 days). */
  prune(now?: number): Promise<void>;
}

export function responseRouteRepo(env: StoreEnv): ResponseRouteRepo {
  const db = env.db<ResponseRoute>('response-routes');
  // lmdb commits a put asynchronously and reads see it only once committed; a client that names the
  // response as soon as it has it must still reach its provider, so routes are readable from memory until then.
  const pending = new Map<string, string>();
  return {
    providerOf: (id) => pending.get(id) ?? db.get(id)?.providerId,
    remember(id, providerId) {
      pending.set(id, providerId);
      const settled = () => {
        if (pending.get(id) === providerId) pending.delete(id);
      };
      db.put(id, { providerId, createdAt: Date.now() }).then(settled, settled);
    },
    async prune(now = Date.now()) {
      const old = [...db.getRange().filter(({ value }) => now - value.createdAt > KEEP_MS).map(({ key }) => key)];
      if (old.length > 0) await db.transaction(() => old.forEach((k) => db.remove(k)));
    },
  };
}
