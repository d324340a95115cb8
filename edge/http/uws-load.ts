import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

// Which native uWebSockets.js build this Node.js can load. uWS is not on the npm registry under its own name;
// two republished builds are optional dependencies (docs/api.md, HTTP at the edge, says how they were checked):
// - @btc-vision/uwebsockets.js 20.57.0: Node 20/22/24/25 binaries, all linked against glibc 2.38 or newer;
// - @trufflesuite/uws-js-unofficial 20.30: Node 16-20 binaries, glibc 2.36 is enough.
// Each binary is loaded by file name: trufflesuite's entry point silently swaps in a slow pure-JS server when
// its binary does not load, and that must never run unnoticed.

export type Uws = typeof import('@trufflesuite/uws-js-unofficial');

export interface NativeBuild {
  /** The npm package and version, e.g. `@btc-vision/uwebsockets.js@20.57.0`. */
  build: string;
  uws: Uws;
}

const require = createRequire(import.meta.url);

/** Where each package keeps its binaries (neither exports its package.json, so its entry point is resolved). */
const CANDIDATES = [
  { name: '@btc-vision/uwebsockets.js', binaries: (entry: string) => dirname(entry) },
  { name: '@trufflesuite/uws-js-unofficial', binaries: (entry: string) => join(dirname(entry), '..', 'binaries') },
] as const;

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
export function loadNativeUws(
  candidates: readonly { name: string; binaries: (entry: string) => string }[] = CANDIDATES,
): NativeBuild | { failures: string[] } {
  const file = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  const failures: string[] = [];
  for (const { name, binaries } of candidates) {
    let entry: string;
    try {
      entry = require.resolve(name);
    } catch {
      failures.push(`${name}: not installed`);
      continue;
    }
    const dir = binaries(entry);
    try {
      const uws = require(join(dir, file)) as Uws;
      const pkgDir = name.startsWith('@trufflesuite/') ? join(dir, '..') : dir;
      return { build: `${name}@${versionOf(pkgDir)}`, uws };
    } catch (err) {
      const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 300);
      failures.push(`${name}: ${file} does not load (${reason})`);
    }
  }
  return { failures };
}
