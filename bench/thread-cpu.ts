// CPU time by thread class (edge, relay, gc, rest) of one process over one load, for `npm run bench` (W3.2).
// The classification is floor/thread-classes.mjs's, the same compare.sh uses through floor/thread-split.mjs.
import { snapshot, splitTicks } from './floor/thread-classes.mjs';

export type ThreadClass = 'edge' | 'relay' | 'gc' | 'rest';
/** CPU seconds (utime + stime) of each class of a process's threads over a run. */
export type ThreadCpu = Record<ThreadClass, number>;

/** Starts counting the threads of process `pid`; the function returned gives each class's CPU seconds since. */
export function countThreads(pid: number, tick: number): () => ThreadCpu {
  const before = snapshot(pid);
  return () => {
    const t = splitTicks(pid, before, snapshot(pid));
    return { edge: t.edge / tick, relay: t.relay / tick, gc: t.gc / tick, rest: t.rest / tick };
  };
}
