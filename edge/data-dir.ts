import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** `$SWITCHYARD_HOME`, else the platform's per-user data directory. */
export function resolveDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SWITCHYARD_HOME) return resolve(env.SWITCHYARD_HOME);
  const home = homedir();
  switch (process.platform) {
    case 'darwin':
      return join(home, 'Library', 'Application Support', 'Switchyard');
    case 'win32':
      return join(env.LOCALAPPDATA ?? join(home, 'AppData', 'Local'), 'Switchyard');
    default:
      return join(env.XDG_DATA_HOME ?? join(home, '.local', 'share'), 'switchyard');
  }
}

export const TOKEN_FILE = 'token';

/** `SWITCHYARD_PORT`, default 3939; 0 asks the OS for a free port (tests run many instances side by side). */
export function resolvePort(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SWITCHYARD_PORT;
  if (raw === undefined || raw === '') return 3939;
  const port = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`SWITCHYARD_PORT must be a port number, not "${raw}"`);
  return port;
}
