// Catalog writes under load (W3.5 item 5): 8 concurrent writers create 10,000 catalog models through
// POST /v1/catalog/models while one client polls GET /health, against the compiled service as `npm start`
// runs it. Reports creates/s (overall, and per 1,000 models so a cost that grows with the catalog shows) and
// /health latency meanwhile. Targets: >= 1,000 creates/s and /health p99 < 20 ms on a 2-core machine.
//
//   node --import tsx bench/catalog-writes.ts
//
// Knobs: BENCH_MODELS (10000), BENCH_WRITERS (8), BENCH_SECONDS (120: writers stop there, the figures say how
// many were created), BENCH_HEALTH_GAP_MS (5, between two /health polls), BENCH_LABEL (the row's name; the
// commit by default), BENCH_PROFILE_DIR (runs the service under --cpu-prof, for profile-top.ts; such a run
// only prints). Writes bench/CATALOG.md and its section of bench/RESULTS.md, adding a row to the runs kept
// there (kept by the full run, bench/sections.ts). Asserts nothing.

import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CATALOG_SECTION, readSection, writeSection } from './sections.ts';
import { startSwitchyard } from './switchyard.ts';

const MODELS = Number(process.env.BENCH_MODELS ?? 10_000);
const WRITERS = Number(process.env.BENCH_WRITERS ?? 8);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 120);
const HEALTH_GAP_MS = Number(process.env.BENCH_HEALTH_GAP_MS ?? 5);
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
const BENCH = fileURLToPath(new URL('.', import.meta.url));
const RESULTS = join(BENCH, 'RESULTS.md');
/** The table row's first cell: BENCH_LABEL, else the commit the run is of (`+` when the tree has changes). */
const LABEL = process.env.BENCH_LABEL ?? gitLabel();

function gitLabel(): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: BENCH, encoding: 'utf8' }).trim();
  try {
    // The files this bench writes do not count as a change of what it measures.
    const changed = git('status', '--porcelain', '--', '..', ':(exclude)CATALOG.md', ':(exclude)RESULTS.md');
    return git('rev-parse', '--short', 'HEAD') + (changed === '' ? '' : '+');
  } catch {
    return 'unknown';
  }
}

// Kept-alive connections, as a management client would hold them: the figure is the service's write path,
// not connection set-up.
const agent = new Agent({ keepAlive: true, maxSockets: WRITERS + 1 });

function call(
  port: number,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (payload !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** CPU time (utime + stime, in clock ticks) of a process and all its threads. */
function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * Waits, at most 15 s, until the service spends under a tenth of a core over 250 ms: right after it listens
 * its workers still start (the pools, Gauge, hardware, the library scan), and the first writes would pay for it.
 */
async function settled(pid: number): Promise<void> {
  const deadline = performance.now() + 15_000;
  while (performance.now() < deadline) {
    const before = cpuTicks(pid);
    await new Promise((r) => setTimeout(r, 250));
    if (cpuTicks(pid) - before <= 2) return; // 100 ticks a second: 2 in 250 ms is 8% of a core
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function main(): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'bench-catalog-'));
  // The machine's 1-minute load average: on a shared machine, what else ran says as much as the figures.
  const loadAtStart = loadavg()[0]!.toFixed(1);
  let child: ChildProcess | undefined;
  try {
    const extraNodeFlags = PROFILE_DIR === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`];
    const started = await startSwitchyard({
      home,
      logFile: join(home, 'service.log'),
      extraNodeFlags,
      track: (c) => (child = c),
    });
    const { port, token } = started;
    const must = async (method: string, path: string, body?: unknown) => {
      const res = await call(port, token, method, path, body);
      if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
    };
    // A provider nothing is fetched from (a closed port, no auto list): every model is an explicit record.
    await must('POST', '/v1/providers', {
      id: 'bench',
      kind: 'openai_compatible',
      baseUrl: 'http://127.0.0.1:9/v1',
      autoProxyModels: false,
    });
    await settled(started.child.pid!);

    let next = 0;
    let created = 0;
    let errors = 0;
    const doneAt: number[] = []; // ms since the start at each 1,000th create
    let running = true;
    const health: number[] = [];
    const poller = (async () => {
      while (running) {
        const t0 = performance.now();
        const res = await call(port, token, 'GET', '/health');
        if (res.status === 200) health.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, HEALTH_GAP_MS));
      }
    })();
    const t0 = performance.now();
    const until = t0 + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (next < MODELS && performance.now() < until) {
          const i = next++;
          const res = await call(port, token, 'POST', '/v1/catalog/models', {
            providerId: 'bench',
            upstreamModelId: `model-${String(i).padStart(5, '0')}`,
            families: ['styleA.chat_completions'],
            ...(i % 4 === 0 && { aliases: [`alias-${i}`] }),
          });
          if (res.status === 201) {
            created++;
            if (created % 1000 === 0) doneAt.push(performance.now() - t0);
          } else errors++;
        }
      }),
    );
    const elapsed = (performance.now() - t0) / 1000;
    running = false;
    await poller;
    const listed = await call(port, token, 'GET', '/v1/catalog/models?providerId=bench');
    const inCatalog = (JSON.parse(listed.text) as { data: unknown[] }).data.length;

    const sorted = [...health].sort((a, b) => a - b);
    const f = (n: number) => n.toFixed(2);
    const perThousand = doneAt.map((t, i) => 1000 / ((t - (doneAt[i - 1] ?? 0)) / 1000));
    const row =
      `| ${LABEL} | ${created} | ${errors} | ${inCatalog} | ${f(elapsed)} | ${f(created / elapsed)} | ` +
      `${sorted.length} | ${f(percentile(sorted, 50))} | ${f(percentile(sorted, 99))} | ${f(sorted.at(-1) ?? NaN)} | ` +
      `${perThousand.map((r) => r.toFixed(0)).join(' ') || '-'} | ${loadAtStart} |`;
    // Earlier runs stay in the table (newest last), so a change's before and after sit side by side.
    const earlier = (readSection(RESULTS, CATALOG_SECTION) ?? '')
      .split('\n')
      .filter((l) => l.startsWith('| ') && !l.startsWith('| build ') && !l.startsWith('|---'));
    const md = [
      '# Catalog writes: creates/s and /health latency meanwhile (`bench/catalog-writes.ts`)',
      '',
      `${WRITERS} writers over kept-alive connections POST /v1/catalog/models (explicit records of one provider, a ` +
        `quarter with an alias) up to ${MODELS} models or ${SECONDS} s, once the service has settled after its start ` +
        `(under 8% of a core for 250 ms); one client polls GET /health ${HEALTH_GAP_MS} ms after each answer; ` +
        `compiled build with \`npm start\`'s flags.`,
      `Targets: >= 1,000 creates/s and /health p99 < 20 ms. Last run ${new Date().toISOString()} on ${cpus().length} ` +
        `x ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}. "creates/s per 1,000" is the rate over each ` +
        `successive 1,000 models; "load at start" the machine's 1-minute load average (2 cores, shared).`,
      '',
      '| build | created | errors | in catalog after | seconds | creates/s | /health polls | /health p50 ms | p99 ms ' +
        '| max ms | creates/s per 1,000 | load at start |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|',
      ...earlier.slice(-7),
      row,
      '',
    ].join('\n');
    if (PROFILE_DIR === undefined) {
      writeFileSync(join(BENCH, 'CATALOG.md'), md);
      writeSection(RESULTS, CATALOG_SECTION, md.replace(/^# /, '## '));
    }
    process.stdout.write(md);
  } finally {
    agent.destroy();
    if (child !== undefined && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(home, { recursive: true, force: true });
  }
}

await main();
