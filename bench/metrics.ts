// What GET /metrics costs the hot path: `answered` (one per answer) and `usage` (one per gateway call) on a
// warmed registry, against a baseline in the same run that does the same loop with an empty observer, and the
// heap each adds per million calls. Then what one scrape costs to render with a realistic number of series.
//
//   node --import tsx bench/metrics.ts [calls]
//
// Prints its figures; a benchmark, not a test: it asserts nothing about speed.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createServiceMetrics } from '../metrics/service.ts';
import type { RequestObserver } from '../metrics/traffic.ts';
import type { UsageEvent } from '../protocol/gateway.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const CALLS = Number(process.argv[2] ?? 2_000_000);
const ROUTES = [
  'POST /v1/chat/completions',
  'POST /v1/messages',
  'GET /v1/models',
  'POST /v1/embeddings',
  'GET /health',
];
const METHODS = ['POST', 'POST', 'GET', 'POST', 'GET'];
const STATUSES = [200, 200, 200, 429, 200, 500, 200, 404];

const metrics = createServiceMetrics({
  version: '0.0.0',
  edge: 'node:http',
  proxyPool: () => ({ queued: 0, threads: 2, utilization: 0 }),
  meter: () => ({ inflight: 0, dropped: 0 }),
  arenaInUse: () => 0,
  gaugeSources: () => [],
  credentials: () => [],
});
const empty: RequestObserver = { answered() {}, failed() {} };

function answers(observer: RequestObserver, n: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const r = i % ROUTES.length;
    observer.answered(ROUTES[r]!, METHODS[r]!, STATUSES[i & 7]!, (i % 1000) / 10);
  }
  return Number(process.hrtime.bigint() - start) / n;
}

const usage = (i: number): UsageEvent => ({
  kind: 'usage',
  requestId: 'req_x',
  at: 0,
  tokenId: 'tok_x',
  providerId: i % 3 === 0 ? 'openai' : 'anthropic',
  modelId: null,
  op: 'chat.completions',
  outcome: 'ok',
  usage: {
    inputTokens: 31,
    outputTokens: 17,
    cachedInputTokens: 8,
    reasoningTokens: 5,
    totalTokens: 48,
    costUsd: null,
    toolCalls: {},
  },
});

function heapPer(run: () => void): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  run();
  const after = process.memoryUsage().heapUsed;
  return after - before;
}

answers(empty, 200_000);
answers(metrics.observer, 200_000);
const baseline = answers(empty, CALLS);
const observed = answers(metrics.observer, CALLS);
const heapBase = heapPer(() => answers(empty, 1_000_000));
const heapObserved = heapPer(() => answers(metrics.observer, 1_000_000));

const events = Array.from({ length: 3 }, (_, i) => usage(i));
const startUsage = process.hrtime.bigint();
for (let i = 0; i < CALLS; i++) metrics.usage(events[i % 3]!);
const usageNs = Number(process.hrtime.bigint() - startUsage) / CALLS;

const renders = 200;
const startRender = process.hrtime.bigint();
let bytes = 0;
for (let i = 0; i < renders; i++) bytes = metrics.render().length;
const renderUs = Number(process.hrtime.bigint() - startRender) / renders / 1000;
metrics.close();

console.log(
  `answered: ${observed.toFixed(1)} ns a call against ${baseline.toFixed(1)} ns for an empty observer (${CALLS} calls)`,
);
console.log(
  `heap after a million answers: ${((heapObserved - heapBase) / 1024).toFixed(0)} KiB more than the empty observer ` +
    `(GC not forced between)`,
);
console.log(`usage: ${usageNs.toFixed(1)} ns a gateway call`);
console.log(`render: ${renderUs.toFixed(0)} us a scrape, ${bytes} bytes`);
