// Many agents: N concurrent slow SSE streams (the fake sends a chunk every 50 ms for 10 s, each stamped
// with its send time). Measures errors and, per chunk, the transit delay from the fake's write to this
// client's read, and per stream the longest gap between two reads that brought deltas (from its first delta
// on): a stream whose gaps all stay within `stallMs` is stall-free. Run as its own process: node --import tsx agents.ts
// '<json options>'; prints one JSON line.
// Bounded: every stream is destroyed at the deadline and the process exits.
import { Agent, request } from 'node:http';

interface Options {
  port: number;
  path: string;
  headers: Record<string, string>;
  body: string;
  count: number;
  rampMs: number;
  deadlineMs: number;
  expectChunks: number;
  /** A gap between deltas longer than this is a stall (default 100 ms). */
  stallMs?: number;
}

const o = JSON.parse(process.argv[2]!) as Options;
const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
const now = () => performance.timeOrigin + performance.now();
const delays = new Float64Array(o.count * (o.expectChunks + 10));
const firsts: number[] = []; // per stream: request sent -> first chunk read (queueing shows here)
let nDelays = 0;
const errors: Record<string, number> = {};
const fail = (why: string) => void (errors[why] = (errors[why] ?? 0) + 1);
let ok = 0;
/** Streams that completed whole with no gap between deltas over stallMs; and the longest gap of each. */
let stallFree = 0;
const maxGaps: number[] = [];
const STALL_MS = o.stallMs ?? 100;
let finished = 0;
const started = now();
const live = new Set<{ destroy(): void }>();
const STAMP = /t=(\d+\.\d+);/g;

function one(): void {
  const sentAt = now();
  const req = request(
    {
      host: '127.0.0.1',
      port: o.port,
      method: 'POST',
      path: o.path,
      agent,
      headers: { ...o.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(o.body) },
    },
    (res) => {
      if (res.statusCode !== 200) {
        fail(`status ${res.statusCode}`);
        res.resume();
        res.on('end', done);
        return;
      }
      res.setEncoding('utf8');
      let buf = '';
      let chunks = 0;
      let sawDone = false;
      let lastDelta = 0;
      let maxGap = 0;
      res.on('data', (s: string) => {
        const t = now();
        if (chunks === 0 && firsts.length < o.count) firsts.push(t - sentAt);
        buf += s;
        const cut = buf.lastIndexOf('\n\n');
        if (cut < 0) return;
        const complete = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        STAMP.lastIndex = 0;
        const before = chunks;
        for (let m = STAMP.exec(complete); m !== null; m = STAMP.exec(complete)) {
          chunks++;
          if (nDelays < delays.length) delays[nDelays++] = t - Number(m[1]);
        }
        if (chunks > before) {
          if (lastDelta !== 0) maxGap = Math.max(maxGap, t - lastDelta);
          lastDelta = t;
        }
        if (complete.includes('[DONE]')) sawDone = true;
      });
      res.on('end', () => {
        if (chunks !== o.expectChunks) fail(`chunks ${chunks < o.expectChunks ? 'short' : 'extra'}`);
        else if (!sawDone) fail('no [DONE]');
        else {
          ok++;
          maxGaps.push(maxGap);
          if (maxGap <= STALL_MS) stallFree++;
        }
        done();
      });
      res.on('error', (e) => fail(`response ${(e as NodeJS.ErrnoException).code ?? e.message}`));
    },
  );
  live.add(req);
  let counted = false;
  function done() {
    if (counted) return;
    counted = true;
    live.delete(req);
    if (++finished === o.count) report();
  }
  req.on('error', (e) => {
    fail(`request ${(e as NodeJS.ErrnoException).code ?? e.message}`);
    done();
  });
  req.on('close', () => setImmediate(done));
  req.end(o.body);
}

for (let i = 0; i < o.count; i++) setTimeout(one, (i * o.rampMs) / o.count);

/** This client's own CPU time (user + system): the load generator's share of the machine. */
const cpuSeconds = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

let reported = false;
function report(): void {
  if (reported) return;
  reported = true;
  const d = delays.subarray(0, nDelays).sort();
  const q = (p: number) => (d.length ? d[Math.min(d.length - 1, Math.floor(p * d.length))]! : NaN);
  const f = Float64Array.from(firsts).sort();
  const qf = (p: number) => (f.length ? f[Math.min(f.length - 1, Math.floor(p * f.length))]! : NaN);
  const errorCount = Object.values(errors).reduce((a, b) => a + b, 0);
  const g = Float64Array.from(maxGaps).sort();
  const qg = (p: number) => (g.length ? g[Math.min(g.length - 1, Math.floor(p * g.length))]! : NaN);
  process.stdout.write(
    JSON.stringify({
      streams: o.count,
      ok,
      errors: errorCount,
      errorKinds: errors,
      chunks: nDelays,
      p50Ms: q(0.5),
      p99Ms: q(0.99),
      p999Ms: q(0.999),
      maxMs: d.length ? d[d.length - 1] : NaN,
      firstP50Ms: qf(0.5),
      firstP99Ms: qf(0.99),
      stallFree,
      stallMs: STALL_MS,
      maxGapP50Ms: qg(0.5),
      maxGapP99Ms: qg(0.99),
      maxGapMaxMs: g.length ? g[g.length - 1] : NaN,
      wallMs: now() - started,
      cpuS: cpuSeconds(),
    }) + '\n',
  );
  process.exit(0);
}

setTimeout(() => {
  if (live.size > 0) errors['unfinished at deadline'] = live.size;
  reported = true; // the destroys below must not report a half-counted run
  for (const r of live) r.destroy();
  reported = false;
  report();
}, o.deadlineMs).unref();
