// CPU per request split by thread class, from /proc/<pid>/task: used by compare.sh for Switchyard and the floor
// in the same run (W3.2).
//
//   node thread-split.mjs snap <pid> > file             one line per thread: tid, name, utime + stime in ticks
//   node thread-split.mjs split <pid> <before> <after> <requests>
//                                                       prints {"edge":us,"relay":us,"gc":us,"rest":us} per request
//
// Classes: `edge` is the main thread and any thread named edge-*; `relay` is a thread whose name holds `relay`
// (Switchyard's workers name themselves sy-relay, sy-meter, ...; the floor's undici workers floor-relay);
// `gc` is V8's platform threads (named V8Worker from Node 22 on; on Node 20, where every thread is `node`,
// the four threads started right after the main thread's DelayedTaskScheduler, in thread-ID order); `rest`
// is everything else (libuv's pool, the meter, other workers).
import { readdirSync, readFileSync } from 'node:fs';

const [mode, pid, ...rest] = process.argv.slice(2);

function snap(pid) {
  const lines = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim().replace(/\s+/g, '_');
      lines.push(`${tid} ${name} ${Number(fields[11]) + Number(fields[12])}`);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return lines.join('\n');
}

function read(file) {
  return new Map(
    readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [tid, name, ticks] = line.split(' ');
        return [tid, { name, ticks: Number(ticks) }];
      }),
  );
}

function classify(pid, threads) {
  const tids = [...threads.keys()].sort((a, b) => Number(a) - Number(b));
  const unnamed = tids.filter((t) => t !== pid && threads.get(t).name === 'node');
  // Node 20: DelayedTaskScheduler, then V8's four platform workers, are the first threads after the main one.
  const node20Gc = new Set(unnamed.slice(1, 5));
  const named = tids.some((t) => threads.get(t).name === 'V8Worker');
  const classOf = (tid) => {
    const name = threads.get(tid).name;
    if (tid === pid || name.startsWith('edge-')) return 'edge';
    if (name.includes('relay')) return 'relay';
    if (name === 'V8Worker' || (!named && node20Gc.has(tid))) return 'gc';
    return 'rest';
  };
  return classOf;
}

if (mode === 'snap') {
  process.stdout.write(snap(pid) + '\n');
} else if (mode === 'split') {
  const [beforeFile, afterFile, requests] = rest;
  const before = read(beforeFile);
  const after = read(afterFile);
  const classOf = classify(pid, after);
  const tick = Number(process.env.CLK_TCK ?? 100);
  const out = { edge: 0, relay: 0, gc: 0, rest: 0 };
  for (const [tid, t] of after) out[classOf(tid)] += t.ticks - (before.get(tid)?.ticks ?? 0);
  for (const k of Object.keys(out)) out[k] = Number((((out[k] / tick) * 1e6) / Number(requests)).toFixed(1));
  process.stdout.write(JSON.stringify(out) + '\n');
} else {
  throw new Error('usage: thread-split.mjs snap <pid> | split <pid> <before> <after> <requests>');
}
