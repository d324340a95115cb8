#!/usr/bin/env node
// postinstall: the two uWebSockets.js packages ship a native binary for every platform, CPU and Node ABI
// (206 MB together); only this machine's platform and CPU can ever load here. Their binaries for other
// platforms and CPUs are removed; every Node ABI of this platform stays, so switching between Node 20, 22 and
// 24 keeps working. SWITCHYARD_KEEP_ALL_UWS=1 skips it. A fresh `npm ci` restores everything.
import { readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIRS = ['node_modules/@btc-vision/uwebsockets.js', 'node_modules/@trufflesuite/uws-js-unofficial/binaries'];
const BINARY = /^uws_([a-z0-9]+)_([a-z0-9]+)_\d+\.node$/;

if (process.env.SWITCHYARD_KEEP_ALL_UWS !== '1') {
  let removed = 0;
  for (const dir of DIRS) {
    let names;
    try {
      names = readdirSync(join(root, dir));
    } catch {
      continue; // optional dependency not installed on this platform
    }
    for (const name of names) {
      const m = BINARY.exec(name);
      if (!m || (m[1] === process.platform && m[2] === process.arch)) continue;
      rmSync(join(root, dir, name), { force: true });
      removed++;
    }
  }
  if (removed > 0)
    console.log(
      `switchyard: removed ${removed} uWebSockets.js binaries for other platforms (SWITCHYARD_KEEP_ALL_UWS=1 ` +
        `keeps them)`,
    );
}
