import type { StoreEnv } from './env.ts';

// The repository most control resources need: one named database of whole records, each under a key it
// carries (an ID or a slug), read whole and staged inside the caller's transaction. Keys are bounded before
// they get here; each resource's repo file says how.

export interface RecordRepo<R> {
  /** In key order. */
  all(): R[];
  get(key: string): R | undefined;
  count(): number;
  stagePut(record: R): void;
  stageRemove(key: string): void;
}

export function recordRepo<R>(env: StoreEnv, name: string, keyOf: (record: R) => string): RecordRepo<R> {
  const db = env.db<R>(name);
  return {
    all: () => [...db.getRange().map(({ value }) => value)],
    get: (key) => db.get(key),
    count: () => db.getCount(),
    stagePut: (record) => void db.put(keyOf(record), record),
    stageRemove: (key) => void db.remove(key),
  };
}
