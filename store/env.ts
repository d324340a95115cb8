import { mkdirSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';

// One LMDB environment per data directory, one named database per resource, msgpackr-encoded values
// (lmdb's default encoding). The environment is the only place lmdb is opened.

export interface StoreEnv {
  root: RootDatabase;
  db<V>(name: string): Database<V, string>;
  /** Runs `writes` in one transaction and resolves once it is committed and flushed to disk. */
  commit<T>(writes: () => T): Promise<T>;
  /**
   * False from the moment close() starts. A put that reaches lmdb-js after its environment closed throws
   * from a timer of lmdb's own, where no caller can catch it: writes outside a request check this first.
   */
  isOpen(): boolean;
  close(): Promise<void>;
}

export const STORE_FILE = 'store.mdb';

export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

export function openStoreEnv(dataDir: string): StoreEnv {
  ensurePrivateDir(dataDir);
  const path = join(dataDir, STORE_FILE);
  const root = open({ path, encoding: 'msgpack', maxDbs: 64 });
  for (const file of [path, `${path}-lock`]) chmodSync(file, 0o600);
  const dbs = new Map<string, Database<unknown, string>>();
  let live = true;
  return {
    root,
    db<V>(name: string) {
      let db = dbs.get(name);
      if (!db) {
        db = root.openDB<unknown, string>({ name, encoding: 'msgpack' });
        dbs.set(name, db);
      }
      return db as Database<V, string>;
    },
    async commit(writes) {
      const result = await root.transaction(writes);
      await root.flushed;
      return result;
    },
    isOpen: () => live,
    async close() {
      live = false;
      await root.flushed;
      await root.close();
    },
  };
}
