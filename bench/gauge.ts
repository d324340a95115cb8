// Gateway latency while Gauge refreshes 20 slow sources, against the same service with no refresh running, in
// one run: phases alternate (idle, refreshing, idle, refreshing) so drift on a shared machine hits both alike.
// The sources are 17 accounts and 3 status pages pointed at a loopback page that answers each request only after
// BENCH_GAUGE_DELAY_MS; a new refresh starts whenever the last one ends, for the whole refreshing phase.
//
//   node --import tsx bench/gauge.ts
//
// Knobs: BENCH_SECONDS (5) per phase, BENCH_ROUNDS (2), BENCH_CONNECTIONS (16), BENCH_GAUGE_DELAY_MS (3000).
// Runs the service from the source tree (tsx), as the tests do. Writes bench/GAUGE.md and its section of
// bench/RESULTS.md (kept there by the full run, bench/sections.ts). Asserts nothing.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GAUGE_SECTION, writeSection } from './sections.ts';

// Read before main() runs (it is awaited at the top level below, ahead of later declarations).
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const DELAY_MS = Number(process.env.BENCH_GAUGE_DELAY_MS ?? 3000);
const BENCH = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(BENCH, '..');

// Child mode: the slow page, its own process so its timers do not share the load generator's loop.
if (process.argv[2] === 'slow-page') {
  const summary = JSON.stringify({
    page: {
      id: 'p',
      name: 'Bench',
      url: 'http://127.0.0.1',
      time_zone: 'Etc/UTC',
      updated_at: new Date().toISOString(),
    },
    status: { indicator: 'none', description: 'All Systems Operational' },
    components: [],
    incidents: [],
    scheduled_maintenances: [],
  });
  const server = createServer((req, res) => {
    req.resume();
    const timer = setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(summary), DELAY_MS);
    res.on('close', () => clearTimeout(timer));
  });
  server.listen(0, '127.0.0.1', () =>
    process.stdout.write(JSON.stringify({ port: (server.address() as { port: number }).port }) + '\n'),
  );
} else {
  await main();
}

function lineOf(child: ChildProcess, match: (line: string) => boolean, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start`)), 30_000);
    const onData = (d: string) => {
      buf += d;
      const line = buf.split('\n').find(match);
      if (line) {
        clearTimeout(timer);
        // Keep draining what follows (the service's request log) without keeping it.
        child.stdout!.off('data', onData).on('data', () => undefined);
        resolve(line);
      }
    };
    child.stdout!.setEncoding('utf8').on('data', onData);
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

type Call = (method: string, path: string, body?: unknown) => Promise<any>;

interface Phase {
  name: string;
  latencies: number[];
  errors: number;
  refreshes: number;
  refreshMs: number[];
}

/** The fake upstream, the slow page and the service, each started and its port read from its first lines. */
async function startAll(children: ChildProcess[], home: string) {
  const fake = spawn(process.execPath, ['--import', 'tsx', join(BENCH, 'fake-upstream.ts'), '0'], {
    cwd: BENCH,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(fake);
  const fakePort = JSON.parse(await lineOf(fake, (l) => l.startsWith('{"port"'), 'fake upstream')).port as number;
  const page = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), 'slow-page'], {
    cwd: BENCH,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(page);
  const pageLine = await lineOf(page, (l) => l.startsWith('{"port"'), 'slow page');
  const pageUrl = `http://127.0.0.1:${JSON.parse(pageLine).port}`;
  const sy = spawn(process.execPath, [join(ROOT, 'bin', 'switchyard.js'), 'start'], {
    cwd: ROOT,
    env: {
      ...process.env,
      SWITCHYARD_HOME: home,
      SWITCHYARD_PORT: '0',
      SWITCHYARD_VAULT: 'file',
      SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(sy);
  const port = JSON.parse(await lineOf(sy, (l) => l.includes('"msg":"listening"'), 'switchyard')).port as number;
  return { fakePort, pageUrl, port };
}

/** A provider and model on the fake, Gauge on, and 20 sources (17 accounts, 3 status pages) on the slow page. */
async function setUp(call: Call, fakePort: number, pageUrl: string): Promise<string[]> {
  await call('POST', '/v1/providers', {
    id: 'bench',
    kind: 'openai',
    baseUrl: `http://127.0.0.1:${fakePort}/v1`,
    credential: 'bench-key',
    autoProxyModels: false,
  });
  await call('POST', '/v1/catalog/models', {
    providerId: 'bench',
    upstreamModelId: 'bench-model',
    families: ['styleA.chat_completions'],
  });
  await call('PATCH', '/v1/settings', { gauge: { enabled: true } });
  const adapters = [
    ['openai', 'admin_key'],
    ['anthropic', 'admin_key'],
    ['openrouter', 'api_key'],
    ['github-copilot', 'api_key'],
  ];
  const sourceIds: string[] = [];
  for (let i = 0; i < 17; i++) {
    const [providerId, authMode] = adapters[i % adapters.length]!;
    sourceIds.push(
      (
        await call('POST', '/v1/gauge/accounts', {
          providerId,
          authMode,
          credential: `bench-${i}`,
          config: { baseUrl: pageUrl },
        })
      ).id,
    );
  }
  for (const id of ['status-openai', 'status-anthropic', 'status-github-copilot']) {
    await call('PUT', `/v1/gauge/sources/${id}`, { enabled: true, config: { baseUrl: pageUrl } });
    sourceIds.push(id);
  }

  return sourceIds;
}

const CHAT = JSON.stringify({ model: 'bench/bench-model', messages: [{ role: 'user', content: 'hi' }] });

/** CONNECTIONS clients of non-streamed chat completions for `seconds`: each answer's latency, and the errors. */
async function loadFor(base: string, token: string, seconds: number): Promise<{ latencies: number[]; errors: number }> {
  const latencies: number[] = [];
  let errors = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < until) {
        const t0 = performance.now();
        const res = await fetch(base + '/v1/chat/completions', {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: CHAT,
        });
        await res.arrayBuffer();
        if (res.status === 200) latencies.push(performance.now() - t0);
        else errors++;
      }
    }),
  );
  return { latencies, errors };
}

function reportOf(phases: Phase[]): string {
  const summary = (name: string) => {
    const all = phases.filter((p) => p.name === name);
    const lat = all.flatMap((p) => p.latencies).sort((a, b) => a - b);
    return {
      n: lat.length,
      rps: lat.length / (all.length * SECONDS),
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      errors: all.reduce((s, p) => s + p.errors, 0),
      refreshes: all.reduce((s, p) => s + p.refreshes, 0),
    };
  };
  const idle = summary('idle');
  const busy = summary('refreshing');
  const refreshTimes = phases.flatMap((p) => p.refreshMs).sort((a, b) => a - b);
  const f = (n: number) => n.toFixed(2);
  return [
    '# Gauge: gateway latency with and without a 20-source refresh',
    '',
    `Run ${new Date().toISOString()} on ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ` +
      `from the source tree (tsx).`,
    `${ROUNDS} rounds of ${SECONDS} s per phase, ${CONNECTIONS} connections of non-streamed chat completions ` +
      `against the bench fake upstream;`,
    `the refreshing phases keep a refresh of 20 sources running (17 accounts and 3 status pages on a loopback page ` +
      `answering after ${DELAY_MS} ms).`,
    '',
    '| phase | requests | req/s | p50 ms | p99 ms | errors | refreshes finished |',
    '|---|---|---|---|---|---|---|',
    `| idle | ${idle.n} | ${f(idle.rps)} | ${f(idle.p50)} | ${f(idle.p99)} | ${idle.errors} | - |`,
    `| refreshing | ${busy.n} | ${f(busy.rps)} | ${f(busy.p50)} | ${f(busy.p99)} | ${busy.errors} | ` +
      `${busy.refreshes} |`,
    '',
    `p50 ratio refreshing/idle: ${f(busy.p50 / idle.p50)}; p99 ratio: ${f(busy.p99 / idle.p99)}. A refresh took ` +
      `${refreshTimes.length ? `${f(percentile(refreshTimes, 50) / 1000)} s (median)` : 'longer than a phase'}.`,
    '',
  ].join('\n');
}

async function main() {
  const children: ChildProcess[] = [];
  const home = mkdtempSync(join(tmpdir(), 'bench-gauge-'));
  try {
    const { fakePort, pageUrl, port } = await startAll(children, home);
    const token = readFileSync(join(home, 'token'), 'utf8').trim();
    const base = `http://127.0.0.1:${port}`;
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(base + path, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : undefined;
    };

    const sourceIds = await setUp(call, fakePort, pageUrl);
    const load = (seconds: number) => loadFor(base, token, seconds);
    await load(2); // warm-up
    const phases: Phase[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const refreshing of [false, true]) {
        let running = refreshing;
        const refreshMs: number[] = [];
        const refresher = (async () => {
          while (running) {
            const t0 = performance.now();
            await call('POST', '/v1/gauge/refresh', { sourceIds });
            refreshMs.push(performance.now() - t0);
          }
        })();
        const { latencies, errors } = await load(SECONDS);
        running = false;
        await refresher;
        phases.push({
          name: refreshing ? 'refreshing' : 'idle',
          latencies,
          errors,
          refreshes: refreshMs.length,
          refreshMs,
        });
      }
    }

    const md = reportOf(phases);
    writeFileSync(join(BENCH, 'GAUGE.md'), md);
    writeSection(join(BENCH, 'RESULTS.md'), GAUGE_SECTION, md.replace(/^# /, '## g. '));
    process.stdout.write(md);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    rmSync(home, { recursive: true, force: true });
  }
}
