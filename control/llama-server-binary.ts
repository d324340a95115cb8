import { execFile } from 'node:child_process';
import { access, constants, realpath, stat } from 'node:fs/promises';
import { basename, delimiter, isAbsolute, join } from 'node:path';

// Finding a llama-server executable, for discovery (GET /v1/runtime/discovery) and for the services that
// spawn one. Paths found here are used to spawn and never reported: answers name the binary only.

export const LLAMA_SERVER_BINARIES = ['llama-server', 'llama-server.exe'] as const;
export type LlamaServerBinary = (typeof LLAMA_SERVER_BINARIES)[number];

const MAX_PATH_DIRS = 256;

/**
 * The PATH directories worth searching: absolute ones (a relative entry would depend on the service's cwd),
 * deduplicated.
 */
function pathDirs(env: NodeJS.ProcessEnv): string[] {
  const raw = env.PATH ?? env.Path ?? '';
  const dirs = raw.split(delimiter).filter((d) => d !== '' && d.length <= 4096 && isAbsolute(d));
  return [...new Set(dirs)].slice(0, MAX_PATH_DIRS);
}

export async function isExecutableFile(file: string): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false;
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first `binary` in PATH order, as a shell would run it, resolved as `resolvedLlamaServer` does; or null. */
export async function locateOnPath(env: NodeJS.ProcessEnv, binary: LlamaServerBinary): Promise<string | null> {
  for (const dir of pathDirs(env)) {
    const file = await resolvedLlamaServer(join(dir, binary));
    if (file !== null) return file;
  }
  return null;
}

/**
 * A configured path is accepted only when it names a llama-server: the API must not become a way to run any program.
 */
export function isLlamaServerPath(file: string): boolean {
  return isAbsolute(file) && (LLAMA_SERVER_BINARIES as readonly string[]).includes(basename(file));
}

/**
 * The file a llama-server path really is, when that file is itself an executable named llama-server; else
 * null. A name alone proves nothing: a symlink called `llama-server` may point at /bin/sh. The resolved path
 * is what gets spawned, so the link cannot be swapped between this check and the start.
 */
export async function resolvedLlamaServer(file: string): Promise<string | null> {
  if (!isLlamaServerPath(file)) return null;
  let real: string;
  try {
    real = await realpath(file);
  } catch {
    return null;
  }
  return isLlamaServerPath(real) && (await isExecutableFile(real)) ? real : null;
}

/** The configured executable when given (checked again at each start: it may be gone), else the first on PATH. */
export async function locateLlamaServer(env: NodeJS.ProcessEnv, configured: string | null): Promise<string | null> {
  if (configured !== null) return resolvedLlamaServer(configured);
  for (const binary of LLAMA_SERVER_BINARIES) {
    const file = await locateOnPath(env, binary);
    if (file !== null) return file;
  }
  return null;
}

export function runVersion(file: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    execFile(
      file,
      ['--version'],
      { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024, windowsHide: true },
      (_error, stdout, stderr) => {
        // A non-zero exit still may have printed the version; whatever came out is parsed.
        resolve(`${String(stdout ?? '')}\n${String(stderr ?? '')}`);
      },
    ).on('error', () => resolve(''));
  });
}
