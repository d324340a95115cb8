#!/usr/bin/env node
// Compiles the service to JavaScript for `npm start` and the bench, so no thread runs a TypeScript loader:
//   node bin/build.js [--out-dir DIR] [--if-stale]
// DIR defaults to dist/. --if-stale does nothing when DIR was built from the source as it is now.
// The compiler writes to a fresh folder that then replaces DIR, so a service starting from DIR meanwhile
// never reads a half-written file.
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readStamp, sourceHash, STAMP_FILE } from './build-stamp.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = (() => {
  try {
    return createRequire(import.meta.url).resolve('typescript/bin/tsc');
  } catch {
    process.stderr.write('The build needs TypeScript, a devDependency: run `npm install` (without --omit=dev).\n');
    process.exit(1);
  }
})();
// An edit during the compile means the output may mix two versions: compile again, this many times at most.
const ATTEMPTS = 3;

const { values } = parseArgs({ options: { 'out-dir': { type: 'string' }, 'if-stale': { type: 'boolean' } } });
const outDir = resolve(values['out-dir'] ?? join(ROOT, 'dist'));

function compile(into, hash) {
  execFileSync(process.execPath, [TSC, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', into], {
    stdio: 'inherit',
  });
  // edge/routes/process.ts reads its name and version from ../../package.json, and `type` makes Node load
  // the output as ES modules wherever it lives.
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  writeFileSync(
    join(into, 'package.json'),
    JSON.stringify({ name: pkg.name, version: pkg.version, private: true, type: 'module' }, null, 2) + '\n',
  );
  // The dashboard's static files, read by edge/routes/dashboard.ts from beside the compiled module.
  cpSync(join(ROOT, 'dashboard'), join(into, 'dashboard'), { recursive: true });
  // Outside the repository (a test's temp dir) the output would not find the dependencies.
  if (relative(ROOT, outDir).startsWith('..'))
    symlinkSync(join(ROOT, 'node_modules'), join(into, 'node_modules'), 'dir');
  writeFileSync(join(into, STAMP_FILE), JSON.stringify({ source: relative(outDir, ROOT) || '.', hash }) + '\n');
}

/** Two builds may finish together: each retries until its folder is in place, then drops the one it replaced. */
function replace(dir, by) {
  const old = `${dir}.old-${process.pid}`;
  for (let tries = 0; ; tries++) {
    rmSync(old, { recursive: true, force: true });
    try {
      renameSync(dir, old);
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
    try {
      renameSync(by, dir);
      break;
    } catch (err) {
      if ((err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') || tries === 5) throw err;
    }
  }
  rmSync(old, { recursive: true, force: true });
}

const started = Date.now();
for (let attempt = 1; ; attempt++) {
  const hash = sourceHash(ROOT);
  if (values['if-stale'] && readStamp(outDir)?.hash === hash) break;
  const staging = `${outDir}.building-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  try {
    compile(staging, hash);
    if (sourceHash(ROOT) !== hash && attempt < ATTEMPTS) continue;
    replace(outDir, staging);
    const shown = relative(process.cwd(), outDir);
    process.stderr.write(
      `Built ${shown.startsWith('..') ? outDir : shown || '.'} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
    break;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
