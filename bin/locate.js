// Where a service keeps its data, and which data directory the service running on this machine uses. Plain
// JavaScript beside the executable, so that `switchyard token` answers without loading the TypeScript
// toolchain (bin/switchyard.js), and the service (service/data-dir.ts) uses the very same rules.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * `$SWITCHYARD_HOME`, else the platform's per-user data directory.
 * @param {NodeJS.ProcessEnv} env
 * @returns {string}
 */
export function resolveDataDir(env = process.env) {
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

/**
 * Per-user runtime state, one small file per running service: where the CLI learns which data directory
 * a service started with another SWITCHYARD_HOME uses.
 * @param {NodeJS.ProcessEnv} env
 * @returns {string}
 */
export function instancesDir(env = process.env) {
  const home = homedir();
  switch (process.platform) {
    case 'darwin':
      return join(home, 'Library', 'Application Support', 'Switchyard', 'instances');
    case 'win32':
      return join(env.LOCALAPPDATA ?? join(home, 'AppData', 'Local'), 'Switchyard', 'instances');
    default:
      return join(env.XDG_STATE_HOME ?? join(home, '.local', 'state'), 'switchyard', 'instances');
  }
}

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return /** @type {NodeJS.ErrnoException} */ (err).code === 'EPERM';
  }
}

/**
 * Records this process as the service on `port` using `dataDir`; returns the function that removes it.
 * @param {{ port: number, dataDir: string }} instance
 * @param {NodeJS.ProcessEnv} env
 * @returns {() => void}
 */
export function recordInstance({ port, dataDir }, env = process.env) {
  const dir = instancesDir(env);
  const file = join(dir, `port-${port}.json`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(file, JSON.stringify({ pid: process.pid, port, dataDir }) + '\n', { mode: 0o600 });
  return () => {
    try {
      if (JSON.parse(readFileSync(file, 'utf8')).pid === process.pid) rmSync(file, { force: true });
    } catch {
      // Gone already, or replaced by a later service on the same port.
    }
  };
}

/**
 * The services running on this machine, from their instance files (a file whose process is gone is ignored).
 * @param {NodeJS.ProcessEnv} env
 * @returns {{ pid: number, port: number, dataDir: string }[]}
 */
function runningInstances(env) {
  const dir = instancesDir(env);
  /** @type {{ pid: number, port: number, dataDir: string }[]} */
  const running = [];
  let names = [];
  try {
    names = readdirSync(dir).filter((n) => /^port-\d{1,5}\.json$/.test(n));
  } catch {
    return running;
  }
  for (const name of names) {
    try {
      const entry = JSON.parse(readFileSync(join(dir, name), 'utf8'));
      if (
        Number.isSafeInteger(entry.pid) &&
        Number.isSafeInteger(entry.port) &&
        typeof entry.dataDir === 'string' &&
        alive(entry.pid)
      )
        running.push(entry);
    } catch {
      // Half-written or foreign: not a service to point at.
    }
  }
  return running;
}

/**
 * The running service the CLI is about: the one using SWITCHYARD_HOME when that is set; else the one on
 * SWITCHYARD_PORT (default 3939), else the only one running; null when none matches.
 * @param {NodeJS.ProcessEnv} env
 * @returns {{ pid: number, port: number, dataDir: string } | null}
 */
export function locateInstance(env = process.env) {
  const running = runningInstances(env);
  if (env.SWITCHYARD_HOME) {
    const dataDir = resolveDataDir(env);
    return running.find((r) => r.dataDir === dataDir) ?? null;
  }
  const wanted = Number(env.SWITCHYARD_PORT || 3939);
  return running.find((r) => r.port === wanted) ?? (running.length === 1 ? running[0] : null);
}

/**
 * The data directory of the service the CLI is about: SWITCHYARD_HOME when set; else the running service on
 * SWITCHYARD_PORT (default 3939), else the only running service; else the default data directory.
 * @param {NodeJS.ProcessEnv} env
 * @returns {string}
 */
export function locateDataDir(env = process.env) {
  if (env.SWITCHYARD_HOME) return resolveDataDir(env);
  return locateInstance(env)?.dataDir ?? resolveDataDir(env);
}

/**
 * `switchyard token`: prints the bootstrap admin token of the service the CLI is about; returns the exit code.
 * @returns {number}
 */
export function printToken(env = process.env) {
  const file = join(locateDataDir(env), 'token');
  try {
    process.stdout.write(readFileSync(file, 'utf8'));
    return 0;
  } catch {
    process.stderr.write(
      `No token file at ${file}. Start the service once to create one, or create tokens with an admin token.\n`,
    );
    return 1;
  }
}
