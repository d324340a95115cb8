// CPU per request split by thread class, from /proc/<pid>/task: used by compare.sh for Switchyard and the floor
// in the same run (W3.2). The classes and how threads are put in them: thread-classes.mjs.
//
//   node thread-split.mjs snap <pid> > file             one line per thread: tid, name, utime + stime in ticks
//   node thread-split.mjs split <pid> <before> <after> <requests>
//                                                       prints {"edge":us,"relay":us,"gc":us,"rest":us} per request
import { readFileSync } from 'node:fs';
import { format, parse, snapshot, splitTicks } from './thread-classes.mjs';

const [mode, pid, ...rest] = process.argv.slice(2);

if (mode === 'snap') {
  process.stdout.write(format(snapshot(pid)) + '\n');
} else if (mode === 'split') {
  const [beforeFile, afterFile, requests] = rest;
  const before = parse(readFileSync(beforeFile, 'utf8'));
  const after = parse(readFileSync(afterFile, 'utf8'));
  const out = splitTicks(pid, before, after);
  const tick = Number(process.env.CLK_TCK ?? 100);
  for (const k of Object.keys(out)) out[k] = Number((((out[k] / tick) * 1e6) / Number(requests)).toFixed(1));
  process.stdout.write(JSON.stringify(out) + '\n');
} else {
  throw new Error('usage: thread-split.mjs snap <pid> | split <pid> <before> <after> <requests>');
}
