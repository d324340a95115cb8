import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

// Which native uWebSockets.js build this Node.js can load. uWS is not on the npm registry under its own name;
// two republished builds are optional dependencies (docs/api.md, HTTP at the edge, says how they were checked):
// - @btc-vision/uwebsockets.js 20.57.0: Node 20/22/24/25 binaries, all linked against glibc 2.38 or newer;
// - uws-pack 20.0.8: Node 18/20/21/22 binaries of a newer uWS than 20.30, glibc 2.27 is enough (Debian 12).
// Each binary is loaded by file name, never through a package's entry point: uws-pack's is ESM-only, and the
// binary for this Node ABI must be the one that loads (some republishes swap in a slow pure-JS server).

export type Uws = typeof import('uws-pack');

export interface NativeBuild {
  /** The npm package and version, e.g. `@btc-vision/uwebsockets.js@20.57.0`. */
  build: string;
  uws: Uws;
  /**
   * Whether this build answers every request it cannot serve (400, 431 or 505 at once). uws-pack's leaves a
   * request without `Host` or with folded header lines unanswered until the idle timeout, so `auto` passes it
   * over (choose-edge.ts).
   */
  answersAll: boolean;
}

/**
 * The most bytes of a request head uWS parses: read by its parser from the process environment when the binary
 * first loads (its default is 4 KiB, below what node:http takes); above it, a bare 431.
 */
export const UWS_MAX_HEAD_BYTES = 64 * 1024;

const require = createRequire(import.meta.url);

/** Where each package keeps its binaries, from the package's folder. */
const CANDIDATES = [
  { name: '@btc-vision/uwebsockets.js', binaries: (dir: string) => dir, answersAll: true },
  { name: 'uws-pack', binaries: (dir: string) => join(dir, 'dist', 'bin'), answersAll: false },
] as const;

interface Candidate {
  name: string;
  binaries: (dir: string) => string;
  answersAll: boolean;
}

/** A package's folder, found the way `require` searches, without its `exports` (uws-pack exports ESM only). */
function packageDir(name: string): string | null {
  for (const base of require.resolve.paths(name) ?? []) {
    const dir = join(base, name);
    if (existsSync(join(dir, 'package.json'))) return dir;
  }
  return null;
}

function versionOf(dir: string): string {
  try {
    return (require(join(dir, 'package.json')) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * The first native build that loads, or the reason each did not. `candidates` is for tests; a failure is
 * one short line per package (the loader's message names the missing glibc version or the missing file).
 */
export function loadNativeUws(candidates: readonly Candidate[] = CANDIDATES): NativeBuild | { failures: string[] } {
  const file = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  const failures: string[] = [];
  // Only the main thread's environment is the process's (a worker thread's is a copy), and the main thread
  // loads the binary first (compose.ts chooses the edge before any edge thread starts).
  process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= String(UWS_MAX_HEAD_BYTES);
  for (const { name, binaries, answersAll } of candidates) {
    const pkgDir = packageDir(name);
    if (pkgDir === null) {
      failures.push(`${name}: not installed`);
      continue;
    }
    try {
      const uws = require(join(binaries(pkgDir), file)) as Uws;
      return { build: `${name}@${versionOf(pkgDir)}`, uws, answersAll };
    } catch (err) {
      const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 300);
      failures.push(`${name}: ${file} does not load (${reason})`);
    }
  }
  return { failures };
}
