import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallFacts } from '../edge/gateway/admission.ts';
import type { LimitRecord } from '../protocol/http/limits.ts';
import type { ActiveLimit } from '../protocol/ports/limits.ts';

// What admission costs the edge per call (W3.6: at most 2 us), apart from the network's noise: admit and settle
// under a requests and a dollar limit on the whole service (as bench/floor/compare.sh's switchyard-limits), and
// under none (the baseline: one `idle()` check), in one process, rounds interleaved; each settlement journaled.
//
//   node --import tsx bench/admission.ts [calls per round = 200000] [rounds = 5]
//
// It measures the compiled modules of dist/ where they are built (`npm run build`), as the service runs them:
// under tsx every closure also pays esbuild's `__name`.

const built = existsSync(new URL('../dist/edge/gateway/admission.js', import.meta.url));
const from = (path: string) =>
  new URL(`../${built ? 'dist/' : ''}${path}.${built ? 'js' : 'ts'}`, import.meta.url).href;
const { createAdmission } = (await import(
  from('edge/gateway/admission')
)) as typeof import('../edge/gateway/admission.ts');
const { createLedger, createLedgerBuffer } = (await import(
  from('state/limit-ledger')
)) as typeof import('../state/limit-ledger.ts');
const { openLimitJournal } = (await import(from('store/limit-journal'))) as typeof import('../store/limit-journal.ts');
console.log(`(the ${built ? 'compiled modules of dist/' : 'TypeScript source, through tsx'})`);

const CALLS = Number(process.argv[2] ?? 200_000);
const ROUNDS = Number(process.argv[3] ?? 5);

const record = (id: string, metric: LimitRecord['metric'], max: number): LimitRecord => ({
  id,
  name: id,
  enabled: true,
  scope: { kind: 'service', id: null },
  window: 'day',
  metric,
  max,
  gauge: null,
  createdAt: '',
  updatedAt: '',
});
const limits: ActiveLimit[] = [
  { record: record('lim_calls', 'requests', 1e12), max: 1_000_000_000_000n },
  { record: record('lim_usd', 'usd', 1e6), max: 1_000_000n * 1_000_000_000n },
];
const pricing = {
  inputPerMTok: 1,
  outputPerMTok: 2,
  cachedInputPerMTok: null,
  cacheWritePerMTok: null,
  cacheWrite1hPerMTok: null,
  currency: 'USD',
};
const usage = {
  inputTokens: 12,
  outputTokens: 9,
  cachedInputTokens: 0,
  reasoningTokens: null,
  totalTokens: 21,
  costUsd: null,
  toolCalls: {},
};
const facts: CallFacts = {
  principal: { tokenId: 'tok_bench', scopes: ['inference'], serviceAccountId: null },
  headers: { 'content-type': 'application/json' },
  packSlug: null,
  metered: true,
  bodyBytes: 120,
  maxOutput: 32,
  priced: 'bench/bench-model',
};

// Each settlement is journaled as in the service (store/limit-journal.ts, in a temporary directory): a record per
// settlement, one write a turn. A turn here is TURN calls, about what one event-loop turn settles under load.
const TURN = 32;
const journalDir = mkdtempSync(join(tmpdir(), 'sy-bench-journal-'));
process.on('exit', () => rmSync(journalDir, { recursive: true, force: true }));

async function run(active: ActiveLimit[]): Promise<number> {
  const keys = new Map<number, string>();
  const ledger = createLedger(createLedgerBuffer(), (slot, limitId) => keys.set(slot, `${limitId}|*`));
  const journal = openLimitJournal(
    journalDir,
    0,
    (slot) => keys.get(slot),
    (err) => {
      throw err;
    },
  );
  const admission = createAdmission(
    {
      active: () => active,
      ledger,
      now: Date.now,
      gaugeShare: () => null,
      tripped: () => undefined,
      settled: (slot, windowStart, used) => journal.append(slot, windowStart, used),
    },
    () => pricing,
  );
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) {
    if (i % TURN === 0) await null;
    if (admission.idle()) continue;
    const r = admission.admit(facts);
    if (r !== null) admission.settle(r, usage);
  }
  await null;
  const ns = Number(process.hrtime.bigint() - start) / CALLS;
  journal.close();
  return ns;
}

const off: number[] = [];
const on: number[] = [];
for (let round = 0; round < ROUNDS + 1; round++) {
  const a = await run([]);
  const b = await run(limits);
  // The first round warms the JIT up and is not kept.
  if (round > 0) off.push(a), on.push(b);
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor((xs.length - 1) / 2)]!;
console.log('| admission | ns per call (median) | every round |');
console.log('|---|---|---|');
console.log(`| no limit (idle check) | ${median(off).toFixed(0)} | ${off.map((x) => x.toFixed(0)).join(', ')} |`);
console.log(`| requests + dollar limit | ${median(on).toFixed(0)} | ${on.map((x) => x.toFixed(0)).join(', ')} |`);
