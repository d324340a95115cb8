// W1.8: the comparison bench. Starts a fast fake styleA upstream, nginx (the reference reverse proxy),
// Portkey's gateway, Switchyard (metering on) and the design's floor, all on 127.0.0.1, and measures them in
// one run, interleaved, with one load generator (wrk + lua/post.lua; agents.ts for the many-agents scenario).
// Writes bench/RESULTS.md. Every load loop is bounded by count and time. A benchmark, not a test.
//
//   npm run bench            (from the repository root or bench/)
//   BENCH_ROUNDS=2 BENCH_SECONDS=5 BENCH_AGENTS=2000 npm run bench
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { CATALOG_SECTION, carrySection, GAUGE_SECTION, RUNTIME_SECTION, SESSIONS_SECTION } from './sections.ts';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { report, type WrkResult } from './report.ts';
import { call, startSwitchyard } from './switchyard.ts';
import { countThreads } from './thread-cpu.ts';
import { FLOOR_2_EDGES, SWITCHYARD_2_EDGES } from './report-threads.ts';

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH, '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const LAT_SECONDS = Number(process.env.BENCH_LAT_SECONDS ?? 3);
const AGENTS = Number(process.env.BENCH_AGENTS ?? 2000);
// The same scenario at a size where the client and the fake upstream are not themselves saturated on a
// small machine (2,000 streams are 40,000 chunks/s through one Node client), so the added delay is readable.
const AGENTS_SMALL = Number(process.env.BENCH_AGENTS_SMALL ?? 500);
/** h: stall-free streams at each of these counts (64 deltas, one every 20 ms). */
const STALL_COUNTS = (process.env.BENCH_STALL ?? '128,512,2000')
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n > 0);
const CONNS = 50;
const TICK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
const PROFILE = process.env.BENCH_PROFILE_DIR ?? ''; // when set, Switchyard runs with --cpu-prof into it
const ONLY = process.env.BENCH_ONLY ?? ''; // e.g. "a" to run one scenario (profiling)
const runStart = Date.now();
const loadAtStart = loadavg();
const log = (...a: unknown[]) =>
  console.error(`[bench ${((Date.now() - runStart) / 1000).toFixed(0).padStart(3)}s]`, ...a);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------- processes ----------
const children: ChildProcess[] = [];
function track(c: ChildProcess): ChildProcess {
  children.push(c);
  return c;
}
function stopAll(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
}
process.on('exit', stopAll);
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

function waitLine(c: ChildProcess, match: (line: string) => unknown, what: string, ms = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let err = '';
    const timer = setTimeout(
      () => reject(new Error(`${what} did not start in ${ms} ms:\n${err}\n${buf.slice(-2000)}`)),
      ms,
    );
    c.stderr?.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    const onData = (d: Buffer) => {
      buf += d.toString();
      for (const line of buf.split('\n')) {
        if (match(line)) {
          clearTimeout(timer);
          c.stdout!.off('data', onData);
          c.stdout!.resume(); // keep draining (and dropping) whatever it writes next
          resolve(line);
          return;
        }
      }
      if (buf.length > 1_000_000) buf = buf.slice(-100_000);
    };
    c.stdout!.on('data', onData);
    c.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code}:\n${err}\n${buf.slice(-2000)}`));
    });
  });
}

async function waitHttp(port: number, path: string, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      await call(port, 'GET', path, {}, undefined);
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`${what} never answered on ${port}`);
      await sleep(200);
    }
  }
}

// ---------- /proc ----------
function allPids(): { pid: number; ppid: number }[] {
  const out: { pid: number; ppid: number }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({ pid: Number(name), ppid: Number(rest[1]) });
    } catch {
      /* gone */
    }
  }
  return out;
}
function tree(root: number): number[] {
  const all = allPids();
  const pids = [root];
  for (let i = 0; i < pids.length; i++) for (const p of all) if (p.ppid === pids[i]) pids.push(p.pid);
  return pids;
}
/** utime + stime in seconds of a process tree; a process's stat counts all its threads. */
function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]); // fields 14 and 15: utime, stime
    } catch {
      /* gone */
    }
  }
  return ticks / TICK;
}
/** Busy jiffies of the whole machine (every CPU), from /proc/stat: user + nice + system + irq + softirq + steal. */
function machineBusy(): number {
  const f = readFileSync('/proc/stat', 'utf8').slice(0, 200).split('\n')[0]!.trim().split(/\s+/).map(Number);
  return f[1]! + f[2]! + f[3]! + f[6]! + f[7]! + f[8]!;
}
/**
 * Waits until the machine is quiet: a proxy still draining the backlog of the previous load (Portkey answers
 * for seconds after wrk has gone) would otherwise take the cores from the next target's measurement. Quiet =
 * under 10% of one core over 250 ms; gives up after 20 s and says so. Returns the seconds waited.
 */
async function quiesce(after: string): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const b0 = machineBusy();
    await sleep(250);
    if ((machineBusy() - b0) / TICK < 0.025) return (Date.now() - t0) / 1000;
    if (Date.now() - t0 > 20_000) {
      log(`machine still busy 20 s after ${after}; measuring anyway`);
      return (Date.now() - t0) / 1000;
    }
  }
}
function rssMb(pids: number[]): number {
  let kb = 0;
  for (const pid of pids) {
    try {
      const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) kb += Number(m[1]);
    } catch {
      /* gone */
    }
  }
  return kb / 1024;
}

// ---------- targets ----------
interface Target {
  name: string;
  port: number;
  path: string;
  headers: Record<string, string>;
  model: string;
  pids: () => number[];
  /** The process whose CPU is also split by thread class (W3.2), for Switchyard and the floors. */
  threadsOf?: () => number;
  /** Only these scenarios (letters), for a target measured in a few; every scenario when absent. */
  only?: string;
}

function body(model: string, kind: 'json' | 'sse' | 'big' | 'slow' | 'pace'): string {
  if (kind === 'big') {
    // About 256 KB of prompt: the size of a long agent context.
    const filler = 'The quick brown fox jumps over the lazy dog. '
      .repeat(Math.ceil((256 * 1024) / 45))
      .slice(0, 256 * 1024 - 200);
    return JSON.stringify({
      model,
      messages: [
        { role: 'system', content: 'You are a bench.' },
        { role: 'user', content: filler },
      ],
      max_tokens: 32,
    });
  }
  const b: Record<string, unknown> = {
    model:
      kind === 'slow'
        ? model.replace('bench-model', 'bench-slow')
        : kind === 'pace'
          ? model.replace('bench-model', 'bench-pace')
          : model,
    messages: [{ role: 'user', content: 'Say hello in one short sentence.' }],
    max_tokens: 32,
  };
  if (kind !== 'json') b.stream = true;
  return JSON.stringify(b);
}

const work = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));

let lastRun = 'start';
async function wrk(t: Target, kind: 'json' | 'sse' | 'big', conns: number, seconds: number): Promise<WrkResult> {
  const waited = await quiesce(lastRun);
  if (waited > 0.6) log(`waited ${waited.toFixed(1)} s for the machine to go quiet after ${lastRun}`);
  lastRun = `${t.name} ${kind} x${conns}`;
  const file = join(work, `body-${t.name}-${kind}.json`);
  if (!existsSync(file)) writeFileSync(file, body(t.model, kind));
  const headers = Object.entries(t.headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('|');
  const threads = Math.min(2, conns);
  const pids = t.pids();
  const cpu0 = cpuSeconds(pids);
  const byThread = t.threadsOf ? countThreads(t.threadsOf(), TICK) : null;
  return new Promise((resolve, reject) => {
    const c = spawn(
      'wrk',
      [
        `-t${threads}`,
        `-c${conns}`,
        `-d${seconds}s`,
        '--timeout',
        '10s',
        '-s',
        join(BENCH, 'lua', 'post.lua'),
        `http://127.0.0.1:${t.port}${t.path}`,
      ],
      {
        env: { ...process.env, BENCH_BODY: file, BENCH_HEADERS: headers },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const killer = setTimeout(() => c.kill('SIGKILL'), (seconds + 30) * 1000);
    c.on('exit', () => {
      clearTimeout(killer);
      const cpu = cpuSeconds(pids) - cpu0;
      const split = byThread?.();
      const m = /BENCH_JSON (\{.*\})/.exec(out);
      if (!m) return reject(new Error(`wrk gave no result for ${t.name} ${kind}:\n${out}`));
      resolve({ ...(JSON.parse(m[1]!) as WrkResult), cpu_s: cpu, ...(split ? { threads: split } : {}) });
    });
  });
}

async function agents(
  t: Target,
  count: number,
  fakePid: number,
  kind: 'slow' | 'pace' = 'slow',
): Promise<{ res: any; peakRss: number; rssBefore: number; cpuS: number; fakeCpuS: number }> {
  const pids = t.pids();
  const rssBefore = rssMb(pids);
  const cpu0 = cpuSeconds(pids);
  const fake0 = cpuSeconds([fakePid]);
  let peakRss = rssBefore;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(pids))), 200);
  const opts = {
    port: t.port,
    path: t.path,
    headers: t.headers,
    body: body(t.model, kind),
    count,
    rampMs: 1000,
    deadlineMs: 40_000,
    expectChunks: kind === 'slow' ? 200 : 64,
    stallMs: 100,
  };
  const c = spawn(process.execPath, ['--import', 'tsx', join(BENCH, 'agents.ts'), JSON.stringify(opts)], {
    cwd: BENCH,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const killer = setTimeout(() => c.kill('SIGKILL'), 60_000);
  await new Promise((r) => c.on('exit', r));
  clearTimeout(killer);
  clearInterval(sampler);
  peakRss = Math.max(peakRss, rssMb(pids));
  // The target's CPU over the run, and the fake's (for direct they are the same process).
  return {
    res: JSON.parse(out.trim().split('\n').pop() || '{}'),
    peakRss,
    rssBefore,
    cpuS: cpuSeconds(pids) - cpu0,
    fakeCpuS: cpuSeconds([fakePid]) - fake0,
  };
}

/** The bench's provider and its three models on a Switchyard; the chat model's catalog ID. */
async function addBenchModels(fakePort: number, port: number, auth: Record<string, string>): Promise<string> {
  const prov = await call(
    port,
    'POST',
    '/v1/providers',
    auth,
    JSON.stringify({ kind: 'openai_compatible', id: 'bench', baseUrl: `http://127.0.0.1:${fakePort}/v1` }),
  );
  if (prov.status !== 201) throw new Error(`provider: ${prov.status} ${prov.text}`);
  let model = 'bench/bench-model';
  for (const up of ['bench-model', 'bench-slow', 'bench-pace']) {
    const m = await call(
      port,
      'POST',
      '/v1/catalog/models',
      auth,
      JSON.stringify({ providerId: 'bench', upstreamModelId: up, families: ['styleA.chat_completions'] }),
    );
    if (m.status !== 201 && m.status !== 200) throw new Error(`catalog model: ${m.status} ${m.text}`);
    if (up === 'bench-model') model = (JSON.parse(m.text) as { id: string }).id;
  }
  return model;
}

/** floor/edge.mjs with `edges` edge threads (FLOOR_EDGES) in front of the fake upstream, once it listens. */
async function startFloor(fakePort: number, edges: number): Promise<{ child: ChildProcess; port: number }> {
  const name = edges === 1 ? 'floor' : `floor (${edges} edge threads)`;
  const child = track(
    spawn(process.execPath, [join(BENCH, 'floor', 'edge.mjs')], {
      cwd: BENCH,
      env: { ...process.env, FLOOR_UPSTREAM: String(fakePort), FLOOR_WORKER: 'undici', FLOOR_EDGES: String(edges) },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const port = (JSON.parse(await waitLine(child, (l) => l.startsWith('{"port"'), name)) as { port: number }).port;
  child.stderr!.on('data', (d: Buffer) => log(`${name}:`, d.toString().trim()));
  log(name, 'on', port);
  return { child, port };
}

/** A floor as a target: its process's CPU, split by thread too. */
function floorTarget(name: string, port: number, child: ChildProcess): Target {
  return {
    name,
    port,
    path: '/v1/chat/completions',
    headers: {},
    model: 'bench-model',
    pids: () => tree(child.pid!),
    threadsOf: () => child.pid!,
  };
}

// ---------- main ----------
function have(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Debian's nginx and wrk (installed here only when missing, and only as root), and bench/'s Portkey. */
function ensureTools(): void {
  // Debian's nginx and wrk; installed here only when missing and only as root.
  if (!have('nginx') || !have('wrk')) {
    if (process.getuid?.() !== 0) throw new Error('nginx and wrk are needed: apt-get install -y nginx wrk');
    log('installing nginx and wrk with apt-get');
    execFileSync('apt-get', ['install', '-y', 'nginx', 'wrk'], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  }
  if (!existsSync(join(BENCH, 'node_modules/@portkey-ai/gateway/build/start-server.js'))) {
    throw new Error('Portkey gateway missing: run `npm install` in bench/ (the root `npm run bench` does)');
  }
}

/** nginx, foreground, with its own prefix and config, in front of the fake. */
async function startNginx(fakePort: number) {
  const nginxPort = await freePort();
  const prefix = join(work, 'nginx');
  mkdirSync(prefix, { recursive: true });
  const conf = readFileSync(join(BENCH, 'nginx.conf.template'), 'utf8')
    .replaceAll('{{PREFIX}}', prefix)
    .replaceAll('{{PORT}}', String(nginxPort))
    .replaceAll('{{UPSTREAM_PORT}}', String(fakePort));
  writeFileSync(join(prefix, 'nginx.conf'), conf);
  const nginx = track(
    spawn('nginx', ['-p', prefix, '-c', join(prefix, 'nginx.conf'), '-g', 'daemon off;'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  nginx.stderr!.on('data', (d: Buffer) => log('nginx:', d.toString().trim()));
  await waitHttp(nginxPort, '/v1/models', 'nginx');
  log('nginx on', nginxPort);
  return { nginx, nginxPort };
}

/** Portkey's gateway (it binds all interfaces; the bench only ever talks to 127.0.0.1). */
async function startPortkey(nodeBin: string) {
  const portkeyPort = await freePort();
  const portkey = track(
    spawn(
      nodeBin,
      [join(BENCH, 'node_modules/@portkey-ai/gateway/build/start-server.js'), `--port=${portkeyPort}`, '--headless'],
      { cwd: BENCH, stdio: ['ignore', 'pipe', 'pipe'] },
    ),
  );
  portkey.stdout!.resume();
  portkey.stderr!.resume();
  await waitHttp(portkeyPort, '/', 'portkey');
  log('portkey on', portkeyPort);
  return { portkey, portkeyPort };
}

/** Every target started (the fake, nginx, the floors, Portkey, Switchyard on one and two edge threads). */
async function startTargets(nodeBin: string) {
  // The fake upstream, its own process.
  const fake = track(
    spawn(nodeBin, ['--import', 'tsx', join(BENCH, 'fake-upstream.ts'), '0'], {
      cwd: BENCH,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const fakePort = (
    JSON.parse(await waitLine(fake, (l) => l.startsWith('{"port"'), 'fake upstream')) as { port: number }
  ).port;
  log('fake upstream on', fakePort);

  const { nginx, nginxPort } = await startNginx(fakePort);

  // The design's floor (floor/edge.mjs): a uWS edge and undici in two worker threads, none of Switchyard's own
  // work. Beside Switchyard in every scenario, it shows what this design costs on this machine before features.
  // A second floor with two edge threads on its own port is measured in a and b only (W3.2). The floor loads
  // uWS through dist/, so the build comes first (startSwitchyard builds too, later, when already fresh).
  execFileSync(nodeBin, [join(ROOT, 'bin', 'build.js'), '--if-stale'], { stdio: 'inherit' });
  const { child: floor, port: floorPort } = await startFloor(fakePort, 1);
  const { child: floor2, port: floor2Port } = await startFloor(fakePort, 2);

  const { portkey, portkeyPort } = await startPortkey(nodeBin);

  // Switchyard, metering on (the default), default log level; compiled first as `npm start` does, so no thread
  // runs the TypeScript loader (bench/switchyard.ts).
  const home = join(work, 'switchyard-home');
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const started = await startSwitchyard({
    home,
    logFile: join(work, 'switchyard.log'),
    extraNodeFlags: PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : [],
    track,
  });
  const sy = started.child;
  const syPort = started.port;
  const token = started.token;
  const auth = { authorization: `Bearer ${token}` };
  const model = await addBenchModels(fakePort, syPort, auth);
  // The same service with two edge threads (SWITCHYARD_EDGE_THREADS=2), beside the floor's two, in a and b only.
  const home2 = join(work, 'switchyard-2edges-home');
  mkdirSync(home2, { recursive: true, mode: 0o700 });
  const started2 = await startSwitchyard({
    home: home2,
    logFile: join(work, 'switchyard-2edges.log'),
    track,
    env: { SWITCHYARD_EDGE_THREADS: '2' },
  });
  const auth2 = { authorization: `Bearer ${started2.token}` };
  await addBenchModels(fakePort, started2.port, auth2);
  log('switchyard on', syPort, 'model', model);

  const direct: Target = {
    name: 'direct',
    port: fakePort,
    path: '/v1/chat/completions',
    headers: {},
    model: 'bench-model',
    pids: () => [fake.pid!],
  };
  const targets: Target[] = [
    direct,
    {
      name: 'nginx',
      port: nginxPort,
      path: '/v1/chat/completions',
      headers: {},
      model: 'bench-model',
      pids: () => tree(nginx.pid!),
    },
    {
      name: 'portkey',
      port: portkeyPort,
      path: '/v1/chat/completions',
      headers: {
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `http://127.0.0.1:${fakePort}/v1`,
        authorization: 'Bearer sk-bench',
      },
      model: 'bench-model',
      pids: () => tree(portkey.pid!),
    },
    {
      name: 'switchyard',
      port: syPort,
      path: '/v1/chat/completions',
      headers: auth,
      model,
      pids: () => tree(sy.pid!),
      threadsOf: () => sy.pid!,
    },
    {
      name: SWITCHYARD_2_EDGES,
      port: started2.port,
      path: '/v1/chat/completions',
      headers: auth2,
      model,
      pids: () => tree(started2.child.pid!),
      threadsOf: () => started2.child.pid!,
      only: 'ab',
    },
    floorTarget('floor', floorPort, floor),
    { ...floorTarget(FLOOR_2_EDGES, floor2Port, floor2), only: 'ab' },
  ];
  return { fake, sy, direct, targets };
}

/** Every target must answer correctly before anything is measured. */
async function checkTargets(targets: Target[]): Promise<void> {
  for (const t of targets) {
    for (const kind of ['json', 'sse', 'big'] as const) {
      const r = await call(t.port, 'POST', t.path, t.headers, body(t.model, kind));
      const good =
        r.status === 200 &&
        (kind === 'sse'
          ? r.text.includes('tok18') && r.text.includes('[DONE]') && !r.text.includes('"usage"')
          : r.text.includes('Hello from the bench upstream'));
      if (!good) throw new Error(`${t.name} ${kind}: ${r.status} ${r.text.slice(0, 500)}`);
    }
  }
}

/** a, b, c and f: each round visits every target, in a rotated order. */
async function measure(targets: Target[], runs: (t: Target, s: string) => boolean) {
  const results: Record<string, Record<string, WrkResult[]>> = {};
  const add = (scenario: string, t: Target, r: WrkResult) => ((results[scenario] ??= {})[t.name] ??= []).push(r);
  for (let round = 0; round < ROUNDS; round++) {
    const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
    for (const t of order) {
      if (runs(t, 'a')) add('a', t, await wrk(t, 'json', CONNS, SECONDS));
      if (runs(t, 'b')) add('b', t, await wrk(t, 'sse', CONNS, SECONDS));
      if (runs(t, 'c')) add('cj', t, await wrk(t, 'json', 1, LAT_SECONDS));
      if (runs(t, 'c')) add('cs', t, await wrk(t, 'sse', 1, LAT_SECONDS));
      if (runs(t, 'f')) add('f', t, await wrk(t, 'big', CONNS, SECONDS));
      log(`round ${round + 1}/${ROUNDS} ${t.name} done`);
    }
  }
  return results;
}

type AgentRun = Awaited<ReturnType<typeof agents>>;

/**
 * e: many agents. Direct first (the reference for added delay), then nginx, then Switchyard (Portkey too
 * when BENCH_AGENTS_PORTKEY=1).
 */
async function manyAgents(eTargets: Target[], fakePid: number) {
  const agentRuns: Record<string, AgentRun> = {};
  const agentRunsSmall: Record<string, AgentRun> = {};
  for (const [runs, n] of [
    [agentRuns, AGENTS],
    [agentRunsSmall, AGENTS_SMALL],
  ] as const) {
    if (n <= 0) continue;
    for (const t of eTargets) {
      runs[t.name] = await agents(t, n, fakePid);
      log(`e ${t.name} x${n}:`, JSON.stringify(runs[t.name]!.res));
      await sleep(1000);
    }
  }
  return { agentRuns, agentRunsSmall };
}

/**
 * h: stall-free streams. Direct, nginx, the floor and Switchyard (Portkey too when BENCH_AGENTS_PORTKEY=1), at
 * each count; a stream is stall-free when no gap between its deltas exceeds 100 ms.
 */
async function stallStreams(gTargets: Target[], fakePid: number) {
  const stallRuns: Record<number, Record<string, AgentRun>> = {};
  for (const n of STALL_COUNTS) {
    stallRuns[n] = {};
    for (const t of gTargets) {
      stallRuns[n]![t.name] = await agents(t, n, fakePid, 'pace');
      log(`h ${t.name} x${n}:`, JSON.stringify(stallRuns[n]![t.name]!.res));
      await sleep(1000);
    }
  }
  return stallRuns;
}

/** What the report names the software by: Node, nginx, wrk, Portkey and Hono, Switchyard and its commit. */
function versionsOf(): Record<string, string> {
  const versions = {
    node: process.version,
    nginx: execFileSync('nginx', ['-v'], { stdio: ['ignore', 'pipe', 'pipe'] }).toString() || '',
    wrk: '',
    portkey: (
      JSON.parse(readFileSync(join(BENCH, 'node_modules/@portkey-ai/gateway/package.json'), 'utf8')) as {
        version: string;
      }
    ).version,
    honoNodeServer: (
      JSON.parse(readFileSync(join(BENCH, 'node_modules/@hono/node-server/package.json'), 'utf8')) as {
        version: string;
      }
    ).version,
    switchyard: (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version,
    commit: '',
  };
  try {
    versions.nginx = execFileSync('sh', ['-c', 'nginx -v 2>&1']).toString().trim();
    versions.wrk = execFileSync('sh', ['-c', 'wrk -v 2>&1 | head -1'])
      .toString()
      .trim()
      .replace(/ Copyright.*/, '');
    versions.commit =
      execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']).toString().trim() +
      (execFileSync('git', ['-C', ROOT, 'status', '--porcelain']).toString().trim()
        ? ' (with uncommitted changes)'
        : '');
  } catch {
    /* best effort */
  }
  return versions;
}

async function main(): Promise<void> {
  const nodeBin = process.execPath;
  ensureTools();
  const { fake, sy, direct, targets } = await startTargets(nodeBin);
  await checkTargets(targets);
  log('all targets answer JSON, SSE and 256 KB bodies');

  // The targets of every scenario; the report's tables list these (the two-edge floor has its own section).
  const proxies = targets.filter((t) => t !== direct && !t.only);
  const want = (s: string) => ONLY === '' || ONLY.includes(s);
  const runs = (t: Target, s: string) => want(s) && (!t.only || t.only.includes(s));
  // Warm-up (JIT, connection pools), not measured.
  for (const t of targets) for (const kind of ['json', 'sse'] as const) await wrk(t, kind, CONNS, 2);
  log('warm-up done');
  const results = await measure(targets, runs);
  const slowTargets = [direct, ...proxies].filter(
    (t) => t.name !== 'portkey' || process.env.BENCH_AGENTS_PORTKEY === '1',
  );
  const { agentRuns, agentRunsSmall } = want('e')
    ? await manyAgents(slowTargets, fake.pid!)
    : { agentRuns: {}, agentRunsSmall: {} };
  const stallRuns = want('h') ? await stallStreams(slowTargets, fake.pid!) : {};
  const versions = versionsOf();

  stopAll();
  await sleep(500);
  // A partial or profiled run must not replace the full results.
  const outFile =
    ONLY || PROFILE
      ? join(BENCH, '.work', `RESULTS-${ONLY || 'all'}${PROFILE ? '-profiled' : ''}.md`)
      : join(BENCH, 'RESULTS.md');
  mkdirSync(dirname(outFile), { recursive: true });
  const written = report({
    results,
    agentRuns,
    agentRunsSmall,
    stallRuns,
    versions,
    proxies: proxies.map((t) => t.name),
    settings: {
      rounds: ROUNDS,
      seconds: SECONDS,
      latSeconds: LAT_SECONDS,
      agents: AGENTS,
      agentsSmall: AGENTS_SMALL,
      conns: CONNS,
      tick: TICK,
      loadAtStart,
    },
  });
  // The sections other scripts and sessions wrote, carried over in their order.
  const carried = [GAUGE_SECTION, RUNTIME_SECTION, CATALOG_SECTION, SESSIONS_SECTION].reduce(
    (text, name) => carrySection(outFile, name, text),
    written,
  );
  writeFileSync(outFile, carried);
  if (PROFILE) {
    // --cpu-prof writes its files as the service exits (SIGTERM, then its drain).
    for (let i = 0; i < 100 && sy.exitCode === null && sy.signalCode === null; i++) await sleep(100);
  }
  log('wrote', outFile, 'in', ((Date.now() - runStart) / 1000).toFixed(0), 's');
  rmSync(work, { recursive: true, force: true });
}

main().catch(async (err) => {
  console.error(err);
  stopAll();
  await sleep(500);
  rmSync(work, { recursive: true, force: true });
  process.exitCode = 1;
});
