// The data directory rules live beside the executable in plain JavaScript (bin/locate.js), so that the CLI's
// `token` runs them without the TypeScript toolchain.
export { instancesDir, locateDataDir, printToken, recordInstance, resolveDataDir } from '../bin/locate.js';

export const TOKEN_FILE = 'token';

/** `SWITCHYARD_PORT`, default 3939; 0 asks the OS for a free port (tests run many instances side by side). */
export function resolvePort(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SWITCHYARD_PORT;
  if (raw === undefined || raw === '') return 3939;
  const port = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`SWITCHYARD_PORT must be a port number, not "${raw}"`);
  return port;
}
