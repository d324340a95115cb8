#!/usr/bin/env node
// postinstall: native binaries that this machine can never load are removed (about 100 MB), so that a default
// install stays small (README, Start it):
// - the uWebSockets.js packages ship a binary for every platform, CPU and Node ABI: those for other platforms and
//   CPUs go, and those for Node.js versions outside `engines`; every ABI of `engines` stays, so switching between
//   Node 20, 22 and 24 keeps working;
// - node-llama-cpp's prebuilt packages for ARM declare x64 among their CPUs, so npm installs them on x64 too.
// SWITCHYARD_KEEP_ALL_BINARIES=1 skips it. A fresh `npm ci` restores everything.
import { readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const UWS_DIRS = ['node_modules/@btc-vision/uwebsockets.js', 'node_modules/uws-pack/dist/bin'];
const BINARY = /^uws_([a-z0-9]+)_([a-z0-9]+)_(\d+)\.node$/;
/** The Node ABIs of package.json's `engines` (^20.18 || ^22 || ^24). */
const ENGINE_ABIS = new Set(['115', '127', '137']);
const LLAMA_DIR = 'node_modules/@node-llama-cpp';
/** node-llama-cpp's package names spell `process.arch` their own way. */
const LLAMA_ARCH = { armv7l: 'arm', arm64: 'arm64', x64: 'x64' };

function names(dir) {
  try {
    return readdirSync(join(root, dir));
  } catch {
    return []; // an optional dependency not installed here
  }
}

function prune() {
  let binaries = 0;
  for (const dir of UWS_DIRS) {
    for (const name of names(dir)) {
      const m = BINARY.exec(name);
      if (!m || (m[1] === process.platform && m[2] === process.arch && ENGINE_ABIS.has(m[3]))) continue;
      rmSync(join(root, dir, name), { force: true });
      binaries++;
    }
  }
  let packages = 0;
  for (const name of names(LLAMA_DIR)) {
    // Only the CPU builds of another CPU on this platform: `linux-arm64` on linux x64, not GPU stand-ins.
    const m = /^([a-z0-9]+)-(armv7l|arm64|x64)$/.exec(name);
    if (!m || m[1] !== process.platform || LLAMA_ARCH[m[2]] === process.arch) continue;
    rmSync(join(root, LLAMA_DIR, name), { recursive: true, force: true });
    packages++;
  }
  if (binaries + packages > 0)
    console.log(
      `switchyard: removed ${binaries} uWebSockets.js binaries and ${packages} node-llama-cpp packages this ` +
        'machine cannot load (SWITCHYARD_KEEP_ALL_BINARIES=1 keeps them)',
    );
}

if (process.env.SWITCHYARD_KEEP_ALL_BINARIES !== '1') prune();
