// What traces cost (docs/api.md, Traces): run.ts's scenario a (JSON chat completions, 50 connections, wrk with
// lua/post.lua) against one Switchyard, with traces off and on in the same run, rotated rounds, the setting
// switched live between loads (PATCH /v1/settings). Traces go to a fake OTLP/HTTP collector in its own process
// (this file with `--sink`), which counts the spans it decodes: the run checks every call reached it.
//
//   cd bench && node --import tsx traces.ts        (BENCH_ROUNDS, default 3; BENCH_SECONDS, default 5)
//
// Needs wrk, as run.ts does. Prints its figures and writes bench/.work/TRACES.md; asserts nothing about speed.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { call, startSwitchyard } from './switchyard.ts';
import type { WrkResult } from './wrk-result.ts';

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNS = 50;
// Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks.
const TICKS_PER_S = 100;

/** The fake collector: 200 to every export, the spans counted; GET /count answers how many so far. */
function sink(): void {
  let spans = 0;
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      if (req.method === 'GET') return void res.end(String(spans));
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as {
        resourceSpans: { scopeSpans: { spans: unknown[] }[] }[];
      };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans += ss.spans.length;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1', () =>
    console.log(JSON.stringify({ port: (server.address() as { port: number }).port })),
  );
}

/** A child's first stdout line that parses as `{"port": N}`. */
function portOf(child: ChildProcess, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`${what} exited with ${code}`)));
  });
}

const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
};

function wrk(port: number, bodyFile: string, headers: string): Promise<WrkResult> {
  return new Promise((resolve, reject) => {
    const args = [`-t2`, `-c${CONNS}`, `-d${SECONDS}s`, '--timeout', '10s', '-s', join(BENCH, 'lua', 'post.lua')];
    const c = spawn('wrk', [...args, `http://127.0.0.1:${port}/v1/chat/completions`], {
      env: { ...process.env, BENCH_BODY: bodyFile, BENCH_HEADERS: headers },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (out += d.toString()));
    c.on('error', reject);
    c.on('exit', () => {
      const m = /BENCH_JSON (\{.*\})/.exec(out);
      if (m) resolve(JSON.parse(m[1]!) as WrkResult);
      else reject(new Error(`wrk gave no result:\n${out}`));
    });
  });
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'switchyard-bench-traces-'));
  const children: ChildProcess[] = [];
  const track = (c: ChildProcess) => void children.push(c);
  try {
    const fake = spawn(process.execPath, ['--import', 'tsx', join(BENCH, 'fake-upstream.ts'), '0'], {
      cwd: BENCH,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    track(fake);
    const collector = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--sink'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    track(collector);
    const [fakePort, sinkPort] = await Promise.all([portOf(fake, 'fake upstream'), portOf(collector, 'sink')]);
    const home = join(work, 'home');
    mkdirSync(home, { mode: 0o700 });
    const sy = await startSwitchyard({ home, logFile: join(work, 'switchyard.log'), track });
    const auth = { authorization: `Bearer ${sy.token}` };
    const json = (method: string, path: string, body: unknown) =>
      call(sy.port, method, path, auth, JSON.stringify(body));
    const prov = await json('POST', '/v1/providers', {
      kind: 'openai_compatible',
      id: 'bench',
      baseUrl: `http://127.0.0.1:${fakePort}/v1`,
    });
    if (prov.status !== 201) throw new Error(`provider: ${prov.status} ${prov.text}`);
    const model = await json('POST', '/v1/catalog/models', {
      providerId: 'bench',
      upstreamModelId: 'bench-model',
      families: ['styleA.chat_completions'],
    });
    const modelId = (JSON.parse(model.text) as { id: string }).id;
    const bodyFile = join(work, 'body.json');
    writeFileSync(
      bodyFile,
      JSON.stringify({ model: modelId, messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 32 }),
    );
    const headers = `authorization: Bearer ${sy.token}`;
    const traces = async (enabled: boolean) => {
      const r = await json('PATCH', '/v1/settings', {
        traces: { enabled, endpoint: `http://127.0.0.1:${sinkPort}/v1/traces` },
      });
      if (r.status !== 200) throw new Error(`settings: ${r.status} ${r.text}`);
    };
    const spans = async () => Number((await call(sinkPort, 'GET', '/count', {}, undefined)).text);

    const results: Record<'off' | 'on', { rps: number; p50: number; p99: number; cpuUs: number; errors: number }[]> = {
      off: [],
      on: [],
    };
    let tracedCalls = 0;
    // Warm-up, both ways (the first switch-on loads the SDK).
    for (const mode of ['off', 'on', 'off'] as const) {
      await traces(mode === 'on');
      await wrk(sy.port, bodyFile, headers);
    }
    const spansBefore = await spans();
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
        await traces(mode === 'on');
        const cpu0 = cpuSeconds(sy.child.pid!);
        const r = await wrk(sy.port, bodyFile, headers);
        const cpu = cpuSeconds(sy.child.pid!) - cpu0;
        const errors = r.err_connect + r.err_read + r.err_write + r.err_status + r.err_timeout;
        if (mode === 'on') tracedCalls += r.requests;
        results[mode].push({
          rps: r.requests / (r.duration_us / 1e6),
          p50: r.p50_us / 1000,
          p99: r.p99_us / 1000,
          cpuUs: (cpu * 1e6) / r.requests,
          errors,
        });
        console.log(`round ${round + 1}/${ROUNDS} traces ${mode}: ${Math.round(results[mode].at(-1)!.rps)} req/s`);
      }
    }
    // Switching off flushes the last batch: every traced call must have reached the collector.
    await traces(false);
    const deadline = Date.now() + 15_000;
    let received = (await spans()) - spansBefore;
    while (received < tracedCalls && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      received = (await spans()) - spansBefore;
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const row = (mode: 'off' | 'on') => {
      const rs = results[mode];
      const f = (k: 'rps' | 'p50' | 'p99' | 'cpuUs') => median(rs.map((r) => r[k]));
      const errors = rs.reduce((n, r) => n + r.errors, 0);
      const cells = [mode, f('rps').toFixed(0), f('p50').toFixed(2), f('p99').toFixed(2), f('cpuUs').toFixed(0)];
      return `| ${[...cells, errors].join(' | ')} |`;
    };
    const text = [
      `# Traces: JSON at ${CONNS} connections, off vs on (bench/traces.ts)`,
      '',
      `${ROUNDS} rounds of ${SECONDS} s each way, rotated, one service; medians over the rounds. CPU is the`,
      'service process (all threads) per request.',
      '',
      '| traces | req/s | p50 ms | p99 ms | CPU us/req | errors |',
      '|---|---|---|---|---|---|',
      row('off'),
      row('on'),
      '',
      `Spans the collector received for the traced calls: ${received} of ${tracedCalls}.`,
      '',
    ].join('\n');
    console.log(text);
    const out = join(BENCH, '.work', 'TRACES.md');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, text);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    rmSync(work, { recursive: true, force: true });
  }
}

// Last: the module's constants and helpers above must be initialised before either runs.
if (process.argv.includes('--sink')) sink();
else await main();
