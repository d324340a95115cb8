import { existsSync } from 'node:fs';

// What choosing a provider's key costs the edge per call (W4.2: at most 2 us at 8 keys and 10,000 sessions): the
// pool's choice for a call of a session, among 8 keys with live headroom, with 10,000 sessions in the table, its
// in-flight count and a header observation, against a baseline in the same run (a provider with one key: the
// gateway's path without a pool), rounds interleaved.
//
//   node --import tsx bench/key-pool.ts [calls per round = 200000] [rounds = 5]
//
// It measures the compiled modules of dist/ where they are built (`npm run build`), as the service runs them.

const built = existsSync(new URL('../dist/edge/gateway/key-pool.js', import.meta.url));
const from = (path: string) =>
  new URL(`../${built ? 'dist/' : ''}${path}.${built ? 'js' : 'ts'}`, import.meta.url).href;
const { createKeyPool } = (await import(from('edge/gateway/key-pool'))) as typeof import('../edge/gateway/key-pool.ts');
const { createKeyPoolBuffer, createKeyPoolTable } = (await import(
  from('state/key-pool-table')
)) as typeof import('../state/key-pool-table.ts');
console.log(`(the ${built ? 'compiled modules of dist/' : 'TypeScript source, through tsx'})`);

const CALLS = Number(process.argv[2] ?? 200_000);
const ROUNDS = Number(process.argv[3] ?? 5);
const SESSIONS = 10_000;

const table = createKeyPoolTable(createKeyPoolBuffer());
let clock = Date.now();
const pool = createKeyPool({ table, now: () => clock, idleMs: () => 600_000 });
const keys = Array.from({ length: 8 }, (_, i) => ({
  id: `cred_${String(i).padStart(26, '0')}`,
  weight: 1 + (i % 3),
  enabled: true,
  rejectedAt: null,
  updatedAt: 0,
}));
const headers = (remaining: number) => ({
  'x-ratelimit-remaining-requests': String(remaining),
  'x-ratelimit-limit-requests': '10000',
  'x-ratelimit-reset-requests': '20s',
});
for (const [i, k] of keys.entries()) pool.observe(k.id, headers(5000 + i * 100));
const sessions = Array.from({ length: SESSIONS }, (_, i) => `session-${i}-0123456789abcdef`);
for (const s of sessions) pool.choose('openai', keys, s);
const answer = headers(4321);

function pooled(n: number): number {
  let sink = 0;
  for (let i = 0; i < n; i++) {
    clock++;
    const k = pool.choose('openai', keys, sessions[i % SESSIONS]!)!;
    pool.began(k.id);
    if (i % 16 === 0) pool.observe(k.id, answer);
    pool.ended(k.id);
    sink += k.weight;
  }
  return sink;
}

function single(n: number): number {
  let sink = 0;
  const one = [keys[0]!];
  for (let i = 0; i < n; i++) {
    clock++;
    // A provider with one key takes it, as the gateway does without asking the pool.
    const k = one.length === 1 ? one[0]! : pool.choose('openai', one, sessions[i % SESSIONS]!)!;
    sink += k.weight;
  }
  return sink;
}

const time = (f: (n: number) => number) => {
  const start = process.hrtime.bigint();
  f(CALLS);
  return Number(process.hrtime.bigint() - start) / CALLS;
};
pooled(20_000);
single(20_000);
const rows: [number, number][] = [];
for (let r = 0; r < ROUNDS; r++) rows.push([time(single), time(pooled)]);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const base = median(rows.map((r) => r[0]));
const chosen = median(rows.map((r) => r[1]));
console.log(`one key (baseline): ${base.toFixed(1)} ns a call`);
console.log(`8 keys, ${SESSIONS} sessions: ${chosen.toFixed(1)} ns a call (choice, in flight, 1 in 16 observed)`);
console.log(`the choice costs ${((chosen - base) / 1000).toFixed(3)} us a call (target: at most 2 us)`);
