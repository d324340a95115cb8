// The data directory rules live beside the executable in plain JavaScript (bin/locate.js), so that the CLI's
// `token` runs them without the TypeScript toolchain.
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export { instancesDir, locateDataDir, printToken, recordInstance, resolveDataDir } from '../bin/locate.js';

export const TOKEN_FILE = 'token';

/**
 * What undoes a start that fails before it serves (a taken port, a bad setting): when the data directory was
 * missing or empty before, everything the start put there goes (the store, and an admin token nobody was
 * shown), so that a failed first start leaves nothing behind. A directory that held anything is left alone.
 */
export function undoFreshStart(dataDir: string): () => void {
  let fresh: 'missing' | 'empty' | null;
  try {
    fresh = readdirSync(dataDir).length === 0 ? 'empty' : null;
  } catch (err) {
    fresh = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : null;
  }
  return () => {
    if (fresh === 'missing') rmSync(dataDir, { recursive: true, force: true });
    else if (fresh === 'empty')
      for (const name of readdirSync(dataDir)) rmSync(join(dataDir, name), { recursive: true, force: true });
  };
}

/** `SWITCHYARD_PORT`, default 3939; 0 asks the OS for a free port (tests run many instances side by side). */
export function resolvePort(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SWITCHYARD_PORT;
  if (raw === undefined || raw === '') return 3939;
  const port = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`SWITCHYARD_PORT must be a port number, not "${raw}"`);
  return port;
}
