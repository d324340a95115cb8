import type { Scope } from '../protocol/scopes.ts';
import type { StoreEnv } from './env.ts';
import { recordRepo } from './record-repo.ts';

/** A stored local token: the secret itself is never stored, only its SHA-256. */
export interface TokenRecord {
  id: string;
  name: string;
  scopes: Scope[];
  /** Hex SHA-256 of the secret. */
  hash: string;
  /** The first characters of the secret, so a person can tell tokens apart. */
  prefix: string;
  serviceAccountId: string | null;
  createdAt: number;
  lastUsedAt: number | null;
  expiresAt: number | null;
}

/** Keyed by token ID, which the service generates (protocol/ids.ts); a client's ID reads only an existing record. */
export interface TokenRepo {
  all(): TokenRecord[];
  get(id: string): TokenRecord | undefined;
  stagePut(record: TokenRecord): void;
  stageRemove(id: string): void;
  /** Persists last-use times outside any acknowledged write (they are best-effort by design). */
  touch(updates: Map<string, number>): Promise<void>;
}

export function tokenRepo(env: StoreEnv): TokenRepo {
  const db = env.db<TokenRecord>('tokens');
  return {
    ...recordRepo<TokenRecord>(env, 'tokens', (r) => r.id),
    async touch(updates) {
      await db.transaction(() => {
        for (const [id, at] of updates) {
          const record = db.get(id);
          if (record && (record.lastUsedAt ?? 0) < at) db.put(id, { ...record, lastUsedAt: at });
        }
      });
    },
  };
}
