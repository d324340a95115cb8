// The meter alone: how many usage records per second it takes end to end (record on this thread, fold and
// commit in the worker, flushed to disk), what `record` costs the edge's thread, and whether memory stays
// flat over a million records. Baseline in the same run: folding alone, on one thread, no hop and no LMDB.
//
//   node --import tsx bench/meter.ts [records]
//
// Writes bench/METER.md. A benchmark, not a test: it asserts nothing about speed.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { pino } from 'pino';
import type { GatewayOp, UsageEvent } from '../protocol/gateway.ts';
import { openStoreEnv } from '../store/env.ts';
import { usageRepo } from '../store/usage-repo.ts';
import { createPending, dayCache, foldRecord } from '../workers/meter/aggregate.ts';
import { createMeter } from '../workers/meter/actor.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const TOTAL = Number(process.argv[2] ?? 1_000_000);
const WARMUP = 100_000;
// Two of the meter's 512-record batches: every post happens inside the timed loop, none in a later turn.
const CHUNK = 1_024;
// Pace like a busy edge would be paced by its sockets: stay under the meter's in-flight bound, never drop.
const HIGH_WATER = 50_000;

const OPS: GatewayOp[] = ['chat.completions', 'messages', 'responses.create', 'embeddings', 'audio.speech'];

/** A reusable pool: 3 providers x 4 models x 8 tokens, a quarter with tools, some routed or accelerated. */
function eventPool(): UsageEvent[] {
  return Array.from({ length: 1024 }, (_, i) => {
    const provider = `provider${i % 3}`;
    const e: UsageEvent = {
      kind: 'usage',
      requestId: `req_${i}`,
      at: Date.now(),
      tokenId: `tok_${i % 8}`,
      providerId: provider,
      modelId: `${provider}/model-${i % 4}`,
      op: OPS[i % OPS.length]!,
      outcome: i % 50 === 0 ? 'failed' : 'ok',
      usage: {
        inputTokens: 100 + i,
        outputTokens: 20,
        cachedInputTokens: 0,
        reasoningTokens: null,
        totalTokens: 120 + i,
        costUsd: 0.0001,
        toolCalls: i % 4 === 0 ? { search: 1 } : {},
      },
    };
    if (i % 10 === 0)
      e.route = {
        packSlug: 'coding',
        routeId: `r${i % 3}`,
        fallback: i % 20 === 0,
        fallbackReason: i % 20 === 0 ? 'rate_limited' : null,
      };
    if (i % 10 === 5)
      e.acceleration = {
        mode: i % 20 === 5 ? 'draft' : 'none',
        draftModelId: i % 20 === 5 ? 'local/tiny' : null,
        generationMs: 50,
        draftTokens: 10,
        acceptedDraftTokens: 7,
      };
    return e;
  });
}

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const turn = () => new Promise((resolve) => setImmediate(resolve));

function foldBaseline(pool: UsageEvent[], n: number): number {
  const p = createPending();
  const dayOf = dayCache();
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const e = pool[i & 1023]!;
    foldRecord(p, e, dayOf(e.at));
  }
  return n / ((performance.now() - start) / 1000);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-meter-'));
  const pool = eventPool();
  const foldRate = foldBaseline(pool, TOTAL);

  const env = openStoreEnv(dir);
  const meterOn = (journal: boolean) =>
    createMeter({
      dataDir: dir,
      run: journal ? 'bench' : 'baseline',
      journal,
      enabled: () => true,
      retentionDays: () => 400,
      log: pino({ level: 'warn' }),
    });
  // Baseline in the same run: record() on a meter without the usage journal.
  let meter = meterOn(false);

  const checkpoints: string[] = [];
  async function feed(n: number, checkpointEvery = Infinity): Promise<number> {
    let recordMs = 0;
    let nextCheckpoint = checkpointEvery;
    for (let sent = 0; sent < n; sent += CHUNK) {
      if (sent >= nextCheckpoint) {
        checkpoints.push(`${Math.round(sent / 1000)}k: ${mb(process.memoryUsage().rss)}`);
        nextCheckpoint += checkpointEvery;
      }
      while (meter.stats().inflight > HIGH_WATER) await turn();
      const t = performance.now();
      const size = Math.min(CHUNK, n - sent);
      for (let i = 0; i < size; i++) meter.record(pool[(sent + i) & 1023]!);
      recordMs += performance.now() - t;
      await turn();
    }
    return recordMs;
  }

  await feed(WARMUP);
  const bareMs = await feed(WARMUP);
  await meter.flush();
  await meter.close();
  meter = meterOn(true);
  await feed(WARMUP);
  await meter.flush();
  gc();
  const before = process.memoryUsage();
  let peakRss = before.rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);

  const start = performance.now();
  const recordMs = await feed(TOTAL, TOTAL / 4);
  await meter.flush();
  const elapsedMs = performance.now() - start;
  clearInterval(sampler);
  gc();
  const afterMem = process.memoryUsage();

  const stats = meter.stats();
  const summary = usageRepo(env).summary({ from: '2000-01-01', to: '2100-01-01' });
  await meter.close();
  await env.close();
  rmSync(dir, { recursive: true, force: true });

  const rate = TOTAL / (elapsedMs / 1000);
  const figures = {
    records: TOTAL,
    endToEndPerSecond: Math.round(rate),
    foldOnlyPerSecond: Math.round(foldRate),
    recordMicrosPerCall: Math.round(((recordMs * 1000) / TOTAL) * 100) / 100,
    bareRecordMicrosPerCall: Math.round(((bareMs * 1000) / WARMUP) * 100) / 100,
    elapsedMs: Math.round(elapsedMs),
    dropped: stats.dropped,
    lost: stats.lost,
    committedRequests: summary.totals.requests,
    expectedRequests: TOTAL + 3 * WARMUP,
    rssBeforeMb: mb(before.rss),
    rssAfterMb: mb(afterMem.rss),
    rssPeakMb: mb(peakRss),
    heapBeforeMb: mb(before.heapUsed),
    heapAfterMb: mb(afterMem.heapUsed),
  };
  console.log(JSON.stringify({ ...figures, rssCheckpointsMb: checkpoints }, null, 2));
  writeReport(figures, checkpoints);
}

function writeReport(f: Record<string, number>, checkpoints: string[]): void {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const n = (key: string) => f[key]!.toLocaleString('en-US');
  const md = `# Meter benchmark

\`node --import tsx bench/meter.ts\` on ${availableParallelism()} cores (${cpu}), Node ${process.version},
${new Date().toISOString().slice(0, 10)}. ${n('records')} usage records after ${WARMUP.toLocaleString('en-US')}
warm-up records;
96 dimension tuples (3 providers x 4 models x 8 tokens), a quarter with a tool call, a tenth routed, a tenth
with acceleration data. The feeder keeps at most ${HIGH_WATER.toLocaleString('en-US')} records in flight, as sockets
pace a real edge.

| figure | value |
|---|---|
| end to end: record -> fold in the worker -> committed and flushed | ${n('endToEndPerSecond')} records/s |
| baseline: folding alone, one thread, no hop, no LMDB | ${f['foldOnlyPerSecond']!.toLocaleString('en-US')} records/s |
| cost of \`record()\` on the edge's thread (batching, posting and the usage journal's write included) | ${
    f['recordMicrosPerCall']
  } us per call |
| baseline: the same without the usage journal, same run (${WARMUP.toLocaleString('en-US')} records) | ${
    f['bareRecordMicrosPerCall']
  } us per call |
| wall time for the run | ${f['elapsedMs']!.toLocaleString('en-US')} ms |
| dropped / lost records | ${f['dropped']} / ${f['lost']} |
| requests committed (run + warm-ups + baseline) | ${n('committedRequests')} of ${n('expectedRequests')} |
| RSS before -> after (after GC), peak during the run | ${f['rssBeforeMb']} -> ${f['rssAfterMb']} MB, peak ${
    f['rssPeakMb']
  } MB |
| RSS during the run (MB, by records sent) | ${checkpoints.join(', ')} |
| edge-thread heap before -> after (after GC) | ${f['heapBeforeMb']} -> ${f['heapAfterMb']} MB |

RSS includes the worker thread (whose heap the forced GC does not reach) and the LMDB map pages the process
has touched. The target is at least 50,000 records/s with flat memory.
`;
  writeFileSync(new URL('./METER.md', import.meta.url), md);
}

await main();
