// The local runtime (W2.8 item 2): generation tokens/s and time to first token of the embedded runtime through
// the service (styleA chat completions, streamed) beside node-llama-cpp called in this process with the same
// model file, context, sequences and threads; 1 stream and 8 concurrent streams, interleaved in rounds.
//
// node --import tsx bench/runtime.ts   (from the repository root; writes bench/RUNTIME.md and its section of
// RESULTS.md)
//
// The model is generated (test/helpers/gguf.ts): random F16 weights, a few MB, large enough that generation,
// not the relay, takes the time. Greedy decoding on both sides, so both generate the same tokens. Knobs:
// BENCH_RT_TOKENS (256 per stream), BENCH_RT_ROUNDS (3), BENCH_RT_EMBD (512), BENCH_RT_LAYERS (4),
// BENCH_RT_THREADS (1: on two cores, two llama.cpp threads beside the service's own threads made both sides
// about 10x slower on this model in a first run, 136 against 1,481 tok/s in process).
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getLlama, LlamaChat, LlamaLogLevel, resolveChatWrapper, TokenMeter } from 'node-llama-cpp';
import { writeTinyModel } from '../test/helpers/gguf.ts';
import { RUNTIME_SECTION, writeSection } from './sections.ts';
import { call, startSwitchyard } from './switchyard.ts';

const BENCH = dirname(fileURLToPath(import.meta.url));
const TOKENS = Number(process.env.BENCH_RT_TOKENS ?? 256);
const ROUNDS = Number(process.env.BENCH_RT_ROUNDS ?? 3);
const EMBD = Number(process.env.BENCH_RT_EMBD ?? 512);
const LAYERS = Number(process.env.BENCH_RT_LAYERS ?? 4);
const THREADS = Number(process.env.BENCH_RT_THREADS ?? 1);
const PARALLEL = 8;
const CONTEXT = 1024;
const PROMPT = 'Write a long story about a lighthouse keeper and the sea.';
const now = () => performance.now();
const log = (...a: unknown[]) => console.error('[runtime bench]', ...a);

interface Run {
  /** Per stream: request (or call) to first generated text, ms. */
  ttft: number[];
  /** Tokens generated over all streams, and wall time from the first request to the last stream's end. */
  tokens: number;
  wallMs: number;
  /** Generation only: tokens over (last end - first first-token). */
  genTokS: number;
}

const work = mkdtempSync(join(tmpdir(), 'switchyard-rt-bench-'));
const home = join(work, 'home');
mkdirSync(join(home, 'models'), { recursive: true, mode: 0o700 });
const modelPath = writeTinyModel(join(home, 'models', 'bench.gguf'), {
  embd: EMBD,
  layers: LAYERS,
  weightType: 1,
  contextLength: CONTEXT,
  seed: 7,
});
log(`model: ${(statSync(modelPath).size / 1e6).toFixed(1)} MB, embd ${EMBD}, ${LAYERS} layers, F16`);

// ---------- in process ----------
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ sequences: PARALLEL, contextSize: CONTEXT, threads: THREADS });
// Resolved once, as the runtime does (workers/runtime/models.ts): resolving checks the Jinja template.
const chatWrapper = resolveChatWrapper(model);

async function inProcessStream(t0: number, firsts: number[], ends: number[]): Promise<number> {
  const sequence = context.getSequence();
  const chat = new LlamaChat({ contextSequence: sequence, chatWrapper, autoDisposeSequence: false });
  const before = sequence.tokenMeter.getState();
  try {
    let first = 0;
    await chat.generateResponse(
      [
        { type: 'user', text: PROMPT },
        { type: 'model', response: [] },
      ],
      {
        maxTokens: TOKENS,
        temperature: 0,
        onTextChunk: () => {
          if (first === 0) firsts.push((first = now()) - t0);
        },
      },
    );
    ends.push(now());
    return TokenMeter.diff(sequence.tokenMeter, before).usedOutputTokens;
  } finally {
    chat.dispose({ disposeSequence: false });
    sequence.dispose();
  }
}

// ---------- through the service ----------
let port = 0;
let token = '';
function serviceStream(t0: number, firsts: number[], ends: number[]): Promise<number> {
  const body = JSON.stringify({
    model: 'embedded/bench',
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: TOKENS,
    temperature: 0,
    messages: [{ role: 'user', content: PROMPT }],
  });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/chat/completions',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
        let first = 0;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (s: string) => {
          if (first === 0 && /"content":"[^"]/.test(s)) firsts.push((first = now()) - t0);
          text += s;
        });
        res.on('end', () => {
          ends.push(now());
          const m = /"completion_tokens":(\d+)/.exec(text);
          resolve(m ? Number(m[1]) : 0);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function measure(
  streams: number,
  one: (t0: number, firsts: number[], ends: number[]) => Promise<number>,
): Promise<Run> {
  const firsts: number[] = [];
  const ends: number[] = [];
  const t0 = now();
  const counts = await Promise.all(Array.from({ length: streams }, () => one(t0, firsts, ends)));
  const tokens = counts.reduce((a, b) => a + b, 0);
  const last = Math.max(...ends);
  const firstToken = t0 + Math.min(...firsts);
  return { ttft: firsts, tokens, wallMs: last - t0, genTokS: tokens / ((last - firstToken) / 1000) };
}

const started = await startSwitchyard({ home, logFile: join(work, 'switchyard.log') });
const sy = started.child;
port = started.port;
token = started.token;
const tuning = { runtime: { tuning: { contextSize: CONTEXT, threads: THREADS, parallel: PARALLEL, gpuLayers: -1 } } };
const patched = await call(port, 'PATCH', '/v1/settings', { authorization: `Bearer ${token}` }, JSON.stringify(tuning));
if (patched.status !== 200) throw new Error(`settings: ${patched.status} ${patched.text}`);
// Warm up both: the service loads the model on first use; one short generation each.
await measure(1, serviceStream);
await measure(1, inProcessStream);

const results: Record<string, Run[]> = { 'service 1': [], 'in-process 1': [], 'service 8': [], 'in-process 8': [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const streams of [1, PARALLEL]) {
    // Alternating which goes first, so neither always runs on a machine the other just warmed.
    const order: [string, typeof serviceStream][] = [
      [`service ${streams}`, serviceStream],
      [`in-process ${streams}`, inProcessStream],
    ];
    if (round % 2 === 1) order.reverse();
    for (const [name, fn] of order) {
      results[name]!.push(await measure(streams, fn));
      log(
        `round ${round + 1} ${name}:`,
        JSON.stringify(results[name]!.at(-1)!, (k, v) => (k === 'ttft' ? undefined : v)),
      );
    }
  }
}
sy.kill('SIGTERM');

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)]! : NaN;
};
const tokS = (name: string) => median(results[name]!.map((r) => r.genTokS));
const ttft = (name: string) => median(results[name]!.flatMap((r) => r.ttft));
const L: string[] = [];
L.push('# Local runtime bench (W2.8 item 2)', '');
L.push(
  `Generated by \`node --import tsx bench/runtime.ts\` on ${new Date().toISOString()}: ${cpus()[0]?.model ?? 'cpu'} ` +
    `x ${cpus().length}, Node ${process.version}.`,
);
L.push(
  `Model: generated GGUF, ${(statSync(modelPath).size / 1e6).toFixed(1)} MB (embd ${EMBD}, ${LAYERS} layers, F16, ` +
    `random weights), context ${CONTEXT} per sequence, ${PARALLEL} sequences, ${THREADS} threads, CPU only, greedy, ` +
    `up to ${TOKENS} tokens per stream; ${ROUNDS} rounds, order alternating; medians over rounds (TTFT: over every ` +
    `stream of every round).`,
  '',
);
L.push(
  '| streams | service gen tok/s | in-process gen tok/s | ratio (target >= 0.95) | service TTFT ms | in-process TTFT ' +
    'ms | added TTFT ms (target <= 2) |',
);
L.push('|---|---|---|---|---|---|---|');
for (const n of [1, PARALLEL]) {
  const s = tokS(`service ${n}`);
  const p = tokS(`in-process ${n}`);
  const st = ttft(`service ${n}`);
  const pt = ttft(`in-process ${n}`);
  L.push(
    `| ${n} | ${s.toFixed(1)} | ${p.toFixed(1)} | ${(s / p).toFixed(3)} ${s / p >= 0.95 ? 'met' : '**missed**'} | ` +
      `${st.toFixed(2)} | ${pt.toFixed(2)} | ${(st - pt).toFixed(2)} ${st - pt <= 2 ? 'met' : '**missed**'} |`,
  );
}
L.push(
  '',
  'Service TTFT is request sent to the first chunk with generated text (through the edge, the proxy pool and the ' +
    'runtime worker); in-process TTFT is the call to the first text chunk. Generation tok/s is all tokens of all ' +
    "streams over the time from the first stream's first token to the last stream's end.",
  '',
);
writeFileSync(join(BENCH, 'RUNTIME.md'), L.join('\n'));
writeSection(
  join(BENCH, 'RESULTS.md'),
  RUNTIME_SECTION,
  L.join('\n').replace(
    /^# .*/,
    '## Local runtime: through the service beside node-llama-cpp in process (`bench/runtime.ts`)',
  ),
);
log(L.join('\n'));
await context.dispose();
await model.dispose();
rmSync(work, { recursive: true, force: true });
process.exit(0);
