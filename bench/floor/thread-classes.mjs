// A process's CPU time by thread class, from /proc/<pid>/task (W3.2): the one classification both
// thread-split.mjs (compare.sh's CLI) and `npm run bench` (run.ts, through bench/thread-cpu.ts) use.
//
// Classes: `edge` is the main thread, any thread named edge-* (the floor's) and sy-edge (Switchyard's); `relay`
// is a thread whose name holds `relay` (Switchyard's workers name themselves sy-relay, sy-meter, ...; the
// floor's undici workers floor-relay);
// `gc` is V8's platform threads (named V8Worker from Node 22 on; on Node 20, where every thread is `node`,
// the four threads started right after the main thread's DelayedTaskScheduler, in thread-ID order); `rest`
// is everything else (libuv's pool, the meter, other workers).
import { readdirSync, readFileSync } from 'node:fs';

export const CLASSES = ['edge', 'relay', 'gc', 'rest'];

/**
 * Every thread of process `pid` now: a Map from thread ID (a string) to its name and utime + stime in ticks.
 * @param {number | string} pid
 * @returns {Map<string, { name: string, ticks: number }>}
 */
export function snapshot(pid) {
  const threads = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim().replace(/\s+/g, '_');
      threads.set(tid, { name, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return threads;
}

/** A snapshot as text, one line per thread: tid, name, ticks (thread-split.mjs's files). */
export function format(threads) {
  return [...threads].map(([tid, t]) => `${tid} ${t.name} ${t.ticks}`).join('\n');
}

/** The snapshot `format` wrote. */
export function parse(text) {
  const threads = new Map();
  for (const line of text.trim().split('\n').filter(Boolean)) {
    const [tid, name, ticks] = line.split(' ');
    threads.set(tid, { name, ticks: Number(ticks) });
  }
  return threads;
}

/** The class of each thread of process `pid`, given a snapshot of its threads. */
function classifier(pid, threads) {
  const main = String(pid);
  const tids = [...threads.keys()].sort((a, b) => Number(a) - Number(b));
  const unnamed = tids.filter((t) => t !== main && threads.get(t).name === 'node');
  // Node 20: DelayedTaskScheduler, then V8's four platform workers, are the first threads after the main one.
  const node20Gc = new Set(unnamed.slice(1, 5));
  const named = tids.some((t) => threads.get(t).name === 'V8Worker');
  return (tid) => {
    const name = threads.get(tid).name;
    if (tid === main || name.startsWith('edge-') || name === 'sy-edge') return 'edge';
    if (name.includes('relay')) return 'relay';
    if (name === 'V8Worker' || (!named && node20Gc.has(tid))) return 'gc';
    return 'rest';
  };
}

/**
 * The ticks each class spent between two snapshots of process `pid` (a thread started between them counts
 * from zero; one that ended is lost, as /proc no longer has it).
 * @returns {{ edge: number, relay: number, gc: number, rest: number }}
 */
export function splitTicks(pid, before, after) {
  const classOf = classifier(pid, after);
  const out = { edge: 0, relay: 0, gc: 0, rest: 0 };
  for (const [tid, t] of after) out[classOf(tid)] += t.ticks - (before.get(tid)?.ticks ?? 0);
  return out;
}
