// Summarises V8 .cpuprofile files (node --cpu-prof; one per thread): per thread, the busy time in a window
// and the top functions by self time and by inclusive time. A helper for reading a profiled bench run.
//
//   node --import tsx bench/profile-top.ts <dir> [windowSeconds=10] [skipEndSeconds=0.5] [top=25]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const [dir, windowS = '10', skipS = '0.5', topS = '25'] = process.argv.slice(2);
const short = (url: string) => url.replace(/^file:\/\/\/work\/main\//, '').replace(/^.*node_modules\//, 'nm:');

for (const file of readdirSync(dir!)
  .filter((f) => f.endsWith('.cpuprofile'))
  .sort()) {
  const p = JSON.parse(readFileSync(join(dir!, file), 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const to = p.endTime - Number(skipS) * 1e6;
  const from = to - Number(windowS) * 1e6;
  const self = new Map<number, number>();
  let t = p.startTime;
  let total = 0;
  let idle = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    if (t < from || t > to) continue;
    const dt = p.timeDeltas[i + 1] ?? 0;
    const n = byId.get(p.samples[i]!)!;
    total += dt;
    if (n.callFrame.functionName === '(idle)') idle += dt;
    self.set(n.id, (self.get(n.id) ?? 0) + dt);
  }
  const busy = total - idle;
  if (busy < 0.05 * total) continue; // an idle thread in this window
  const key = (n: Node) =>
    `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
  const selfBy = new Map<string, number>();
  const inclBy = new Map<string, number>();
  for (const [id, dt] of self) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === '(idle)') continue;
    selfBy.set(key(n), (selfBy.get(key(n)) ?? 0) + dt);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = key(byId.get(cur)!);
      if (seen.has(k)) continue;
      seen.add(k);
      inclBy.set(k, (inclBy.get(k) ?? 0) + dt);
    }
  }
  const pct = (v: number) => ((100 * v) / busy).toFixed(1).padStart(5) + '%';
  console.log(
    `\n=== ${file}: window ${(total / 1e6).toFixed(2)} s, busy ${(busy / 1e6).toFixed(2)} s ` +
      `(${((100 * busy) / total).toFixed(0)}%)`,
  );
  console.log('--- self');
  for (const [k, v] of [...selfBy].sort((a, b) => b[1] - a[1]).slice(0, Number(topS))) console.log(pct(v), k);
  console.log('--- inclusive');
  for (const [k, v] of [...inclBy].sort((a, b) => b[1] - a[1]).slice(0, Number(topS) * 2)) console.log(pct(v), k);
}
