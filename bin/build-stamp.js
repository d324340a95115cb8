import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// A build records which source it was made from: a hash over the path and content of every file it is made
// of. Content, not modification times: a checkout, a copy or an editor can leave an edited file with an older
// time than the build. Hashing this tree (~160 files, ~0.5 MB) takes a few milliseconds.

export const STAMP_FILE = 'build-stamp.json';
const SOURCE_DIRS = [
  'bin',
  'cli',
  'control',
  'dashboard',
  'edge',
  'metrics',
  'protocol',
  'service',
  'state',
  'store',
  'workers',
];
const SOURCE_FILES = ['package.json', 'tsconfig.json', 'tsconfig.build.json'];

/** A missing file or folder counts as empty, so a build moved away from its source never matches. */
export function sourceHash(root) {
  const files = [...SOURCE_FILES];
  for (const dir of SOURCE_DIRS) {
    let entries = [];
    try {
      entries = readdirSync(join(root, dir), { recursive: true, withFileTypes: true });
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
    for (const e of entries) if (e.isFile()) files.push(relative(root, join(e.parentPath, e.name)));
  }
  const hash = createHash('sha256');
  for (const file of files.sort()) {
    let content;
    try {
      content = readFileSync(join(root, file));
    } catch (err) {
      if (err.code === 'ENOENT') continue;
      throw err;
    }
    hash.update(`${file}\0${content.length}\0`).update(content);
  }
  return hash.digest('hex');
}

/** `source` is the source root relative to the build, so a repository moved with its dist/ still matches. */
export function readStamp(outDir) {
  try {
    return JSON.parse(readFileSync(join(outDir, STAMP_FILE), 'utf8'));
  } catch {
    return null;
  }
}

/** Why the build at `outDirUrl` must not run, or null when it was made from the source as it is now. */
export function staleBuild(outDirUrl) {
  const outDir = resolve(fileURLToPath(outDirUrl));
  const stamp = readStamp(outDir);
  if (!stamp) return `${outDir} has no ${STAMP_FILE}: run \`npm run build\`.`;
  const root = resolve(outDir, stamp.source);
  if (sourceHash(root) === stamp.hash) return null;
  return (
    `${outDir} was built from other source than ${root} holds now: run \`npm run build\` (\`npm start\` ` +
    `builds first).`
  );
}
