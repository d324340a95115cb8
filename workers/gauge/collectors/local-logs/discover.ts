import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { basename, join, sep } from 'node:path';
import { CollectorError } from '../types.ts';

// Finds the log files under the roots: a bounded walk (depth, entries, files) that follows a symlink only
// when its target stays inside one of the roots, and visits every directory and file once.

export interface FoundFile {
  /** The real path (symlinks resolved), used only to open the file and, hashed, as its state key. */
  path: string;
  identity: string;
  size: number;
  mtimeMs: number;
}

export interface Discovery {
  files: FoundFile[];
  rootsFound: number;
  unreadable: number;
  linksOutside: number;
  /** Files over the cap, skipped (the oldest by modification time). */
  overCap: number;
  /** The walk stopped at its entry bound. */
  truncated: boolean;
}

export interface DiscoverOptions {
  roots: readonly string[];
  matches(name: string): boolean;
  maxFiles: number;
  maxDepth: number;
  maxEntries: number;
  signal: AbortSignal;
}

function inside(path: string, roots: readonly string[]): boolean {
  return roots.some((root) => path === root || path.startsWith(root.endsWith(sep) ? root : root + sep));
}

export async function discover(options: DiscoverOptions): Promise<Discovery> {
  const result: Discovery = { files: [], rootsFound: 0, unreadable: 0, linksOutside: 0, overCap: 0, truncated: false };
  const realRoots: string[] = [];
  for (const root of options.roots) {
    try {
      realRoots.push(await realpath(root));
    } catch {
      // A root that does not exist is an agent that is not installed here, not an error.
    }
  }
  result.rootsFound = realRoots.length;
  const seen = new Set<string>();
  const stack: { path: string; depth: number }[] = realRoots.map((path) => ({ path, depth: 0 }));
  let entries = 0;

  const visit = async (path: string, depth: number, viaLink: boolean): Promise<void> => {
    let real = path;
    if (viaLink) {
      try {
        real = await realpath(path);
      } catch {
        result.unreadable++;
        return;
      }
      if (!inside(real, realRoots)) {
        result.linksOutside++;
        return;
      }
    }
    let info;
    try {
      info = await stat(real);
    } catch {
      result.unreadable++;
      return;
    }
    const identity = `${info.dev}:${info.ino}`;
    if (seen.has(identity)) return;
    seen.add(identity);
    if (info.isDirectory()) {
      if (depth < options.maxDepth) stack.push({ path: real, depth: depth + 1 });
    } else if (info.isFile() && options.matches(basename(real))) {
      result.files.push({ path: real, identity, size: info.size, mtimeMs: info.mtimeMs });
    }
  };

  for (const root of realRoots) {
    // A root may name one file as well as a directory.
    const info = await lstat(root).catch(() => null);
    if (info?.isFile() && options.matches(basename(root))) {
      await visit(root, 0, false);
      stack.splice(
        stack.findIndex((s) => s.path === root),
        1,
      );
    }
  }

  while (stack.length > 0) {
    if (options.signal.aborted) throw new CollectorError('timeout', 'log discovery ran out of time');
    const { path, depth } = stack.pop()!;
    let names;
    try {
      names = await readdir(path, { withFileTypes: true });
    } catch {
      result.unreadable++;
      continue;
    }
    if (depth === 0) {
      const info = await stat(path).catch(() => null);
      if (info !== null) seen.add(`${info.dev}:${info.ino}`);
    }
    for (const entry of names) {
      if (++entries > options.maxEntries) {
        result.truncated = true;
        stack.length = 0;
        break;
      }
      const child = join(path, entry.name);
      if (entry.isSymbolicLink()) await visit(child, depth, true);
      else if (entry.isDirectory()) await visit(child, depth, false);
      else if (entry.isFile() && options.matches(entry.name)) await visit(child, depth, false);
    }
  }

  // Newest first for the cap; then oldest first, so a message copied into a later session file is credited
  // to the session that first wrote it.
  result.files.sort((a, b) => b.mtimeMs - a.mtimeMs);
  result.overCap = Math.max(0, result.files.length - options.maxFiles);
  result.files = result.files.slice(0, options.maxFiles).reverse();
  return result;
}
