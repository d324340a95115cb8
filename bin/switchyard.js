#!/usr/bin/env node
// The package's executable. In the source tree it runs the TypeScript through tsx. A build (bin/build.js,
// dist/ for `npm start`) holds a compiled copy of this file beside the compiled CLI, and that copy runs the
// JavaScript, but only when the build was made from the source as it is now: an edit without a rebuild
// never runs old code.
import { existsSync } from 'node:fs';
import { staleBuild } from './build-stamp.js';
import { printToken } from './locate.js';

// `token` is what a person types most; it needs neither the service nor a TypeScript loader.
if (process.argv[2] === 'token') process.exit(printToken());

const compiledCli = new URL('../service/main.js', import.meta.url);
if (existsSync(compiledCli)) {
  const stale = staleBuild(new URL('..', import.meta.url));
  if (stale) {
    process.stderr.write(stale + '\n');
    process.exit(1);
  }
  await import(compiledCli.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../service/main.ts');
}
