// RESULTS.md's W3.2 section: CPU per request of Switchyard and the floor split by thread class (edge threads,
// relay workers, V8's GC helpers, the rest; floor/thread-classes.mjs), the single-edge ceiling, and the floor at
// one and two edge threads, all over the runs of a and b (run.ts).
import type { WrkResult } from './wrk-result.ts';
import type { ThreadClass } from './thread-cpu.ts';

/** run.ts's name for the floor with two edge threads (FLOOR_EDGES=2), measured in a and b only. */
export const FLOOR_2_EDGES = 'floor-2edges';
/** Switchyard with two edge threads (SWITCHYARD_EDGE_THREADS=2), compared with the two-edge floor. */
export const SWITCHYARD_2_EDGES = 'switchyard-2edges';

const CLASSES: ThreadClass[] = ['edge', 'relay', 'gc', 'rest'];
// The targets: Switchyard's edge and total CPU per request against the floor's.
const EDGE_TARGET = 1.3;
const TOTAL_TARGET = 1.5;

interface Split {
  rps: number;
  perRequest: Record<ThreadClass | 'total', number>; // us
}

/** A target's CPU per request by class over all its rounds (every round's seconds over every round's requests). */
function splitOf(rs: WrkResult[] | undefined): Split | undefined {
  const measured = (rs ?? []).filter((r) => r.threads);
  if (measured.length === 0) return undefined;
  const requests = measured.reduce((n, r) => n + r.requests, 0);
  const secs = measured.reduce((n, r) => n + r.duration_us, 0) / 1e6;
  const perRequest = { edge: 0, relay: 0, gc: 0, rest: 0, total: 0 };
  for (const c of CLASSES) {
    perRequest[c] = (measured.reduce((s, r) => s + r.threads![c], 0) / requests) * 1e6;
    perRequest.total += perRequest[c];
  }
  return { rps: requests / secs, perRequest };
}

const f0 = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '-');

/** Switchyard's figure over the floor's, and whether it is within the target. */
function against(mine: number, floor: number, target: number): string {
  if (!(floor > 0)) return '-';
  const r = mine / floor;
  return `${r.toFixed(2)}x (<= ${target}x: ${r <= target ? 'met' : '**missed**'})`;
}

function row(label: string, s: Split, floor: Split | undefined, compare: boolean): string {
  const p = s.perRequest;
  const vs = (k: 'edge' | 'total', target: number) =>
    compare && floor ? against(p[k], floor.perRequest[k], target) : '-';
  return (
    `| ${label} | ${f0(s.rps)} | ${CLASSES.map((c) => f1(p[c])).join(' | ')} | ${f1(p.total)} | ` +
    `${f0(1e6 / p.edge)} | ${vs('edge', EDGE_TARGET)} | ${vs('total', TOTAL_TARGET)} |`
  );
}

function table(L: string[], title: string, byTarget: Record<string, WrkResult[]>): void {
  const sy = splitOf(byTarget.switchyard);
  const floor = splitOf(byTarget.floor);
  const floor2 = splitOf(byTarget[FLOOR_2_EDGES]);
  const sy2 = splitOf(byTarget[SWITCHYARD_2_EDGES]);
  if (!sy && !floor && !floor2) return;
  L.push(`### ${title}`, '');
  L.push(
    '| target | req/s | edge us/req | relay us/req | GC us/req | rest us/req | total us/req | ' +
      "single-edge ceiling req/s | edge vs the floor's | total vs the floor's |",
  );
  L.push('|---|---|---|---|---|---|---|---|---|---|');
  if (sy) L.push(row('switchyard', sy, floor, true));
  if (sy2) L.push(row('switchyard (2 edge threads)', sy2, floor2, true));
  if (floor) L.push(row('floor', floor, undefined, false));
  if (floor2) L.push(row('floor (2 edge threads)', floor2, undefined, false));
  L.push('');
}

/** The section's lines, or none when neither a nor b ran. */
export function threadSection(results: Record<string, Record<string, WrkResult[]>>, conns: number): string[] {
  if (!results.a && !results.b) return [];
  const L: string[] = ['## W3.2: CPU per request by thread, and the single-edge ceiling', ''];
  L.push(
    "The same runs as a, b and d, each target's own threads read from /proc/<pid>/task before and after every " +
      'load: edge = the main thread and any `edge-*` or `sy-edge` thread; relay = relay workers (`sy-relay`, ' +
      "`floor-relay`); GC = V8's platform threads (`V8Worker`; on Node 20 the four started after the task " +
      'scheduler); rest = the ' +
      'others (libuv pool, meter, ...). Total = the four (the process alone, no children). Single-edge ceiling = ' +
      '1e6 / edge us per request: what one edge thread cannot pass (with two edge threads, edge is both ' +
      'threads together, so the two can reach twice it; each is compared with the two-edge floor). ' +
      "Targets (W3.2): Switchyard's edge <= 1.3x the floor's, total <= 1.5x. " +
      `req/s at ${conns} connections.`,
    '',
  );
  if (results.a) table(L, 'a. Small JSON chat completion', results.a);
  if (results.b) table(L, 'b. 20-chunk SSE stream', results.b);
  return L;
}
