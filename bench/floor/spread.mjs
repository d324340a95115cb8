// Why the hot path builds objects field by field (bench/PROFILE.md, sixth session): on this Node (20.x,
// V8 11.3) an object spread that adds properties its source lacks is cloned on a slow path, and about a fifth
// of the copies are promoted to the old generation, where only a full collection frees them. Each shape runs
// for 1.5 s; the script prints copies made and MB allocated and promoted (from --trace-gc-nvp).
//
//   node bench/floor/spread.mjs
import { spawnSync } from 'node:child_process';

const SHAPES = {
  'literal {a, b, c, x}': (t) => ({ a: t.a, b: t.b, c: t.c, x: {} }),
  '{...t}': (t) => ({ ...t }),
  '{...t, a} (replaces a property)': (t) => ({ ...t, a: 5 }),
  '{x, ...t} (spread last)': (t) => ({ x: {}, ...t }),
  '{...t, x} (adds a property)': (t) => ({ ...t, x: {} }),
  '{...t} then .x = (adds a property)': (t) => {
    const r = { ...t };
    r.x = {};
    return r;
  },
};

const shape = process.argv[2];
if (shape === undefined) {
  console.log('| shape | copies in 1.5 s | allocated MB | promoted MB |');
  console.log('|---|---|---|---|');
  for (const name of Object.keys(SHAPES)) {
    const run = spawnSync(process.execPath, ['--trace-gc-nvp', new URL(import.meta.url).pathname, name], {
      encoding: 'utf8',
      maxBuffer: 1 << 28,
    });
    let allocated = 0;
    let promoted = 0;
    for (const line of run.stdout.split('\n')) {
      if (!/ gc=s /.test(line)) continue;
      allocated += Number(/ allocated=(\d+)/.exec(line)[1]);
      promoted += Number(/ promoted=(\d+)/.exec(line)[1]);
    }
    const copies = /copies (\d+)/.exec(run.stdout)?.[1];
    console.log(`| \`${name}\` | ${copies} | ${(allocated / 1e6).toFixed(0)} | ${(promoted / 1e6).toFixed(0)} |`);
  }
} else {
  const make = SHAPES[shape];
  let keep = [];
  let copies = 0;
  const until = Date.now() + 1500;
  while (Date.now() < until) {
    for (let k = 0; k < 500; k++) keep.push(make({ a: copies++ & 1023, b: null, c: null }));
    keep = [];
  }
  console.log(`copies ${copies}`);
}
