import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { GaugeReading } from '../../../protocol/gauge.ts';
import type { GaugeCollectorId } from '../../../protocol/gauge-catalog.ts';
import { openStoreEnv, STORE_FILE, type StoreEnv } from '../../../store/env.ts';
import { gaugeDataRepo } from '../../../store/gauge-data-repo.ts';
import { gaugeSourceRepo, type GaugeSourceRecord } from '../../../store/gauge-source-repo.ts';
import { CollectorError, type CollectContext, type Collector } from '../../../workers/gauge/collectors/types.ts';
import { createGaugeCore, type GaugeCore } from '../../../workers/gauge/core.ts';
import { fakeClock } from './fake-clock.ts';

// The gauge actor's core in-process, on a real LMDB store, with fake collectors that count what they see.

const dirs: string[] = [];
const envs: StoreEnv[] = [];
after(async () => {
  for (const env of envs) await env.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function reading(ctx: CollectContext, used: number): GaugeReading {
  return {
    accountId: ctx.accountId,
    providerId: 'openai',
    collectedAt: ctx.now().toISOString(),
    source: 'polled',
    confidence: 'high',
    windows: [
      {
        id: 'month',
        kind: 'spend',
        period: 'month',
        used,
        limit: 100,
        remaining: 100 - used,
        utilization: used / 100,
        resetsAt: null,
      },
    ],
    spend: null,
    credits: null,
  };
}

const okCollector: Collector = { providerId: 'openai', collect: async (ctx) => ({ readings: [reading(ctx, 1)] }) };

async function setup(opts: {
  collectors: Partial<Record<GaugeCollectorId, Collector>>;
  accounts?: number;
  poolSize?: number;
  timeoutMs?: number;
  allowedHosts?: 'any' | 'loopback';
  credentials?: Record<string, string>;
}) {
  const dir = mkdtempSync(join(tmpdir(), 'gauge-core-'));
  dirs.push(dir);
  const env = openStoreEnv(dir);
  envs.push(env);
  const sources = gaugeSourceRepo(env);
  const data = gaugeDataRepo(env);
  const ids: string[] = [];
  const now = Date.now();
  await env.commit(() => {
    for (let i = 0; i < (opts.accounts ?? 0); i++) {
      const id = `acct_${String(i).padStart(2, '0')}`;
      ids.push(id);
      const record: GaugeSourceRecord = {
        id,
        kind: 'account',
        collectorId: 'openai',
        providerId: 'openai',
        authMode: 'admin_key',
        label: id,
        enabled: true,
        builtIn: false,
        credentialRef: `cred_${id}`,
        config: { baseUrl: 'http://127.0.0.1:9' },
        createdAt: now + i,
        updatedAt: now + i,
      };
      sources.stagePut(record);
    }
  });
  const credentials = opts.credentials ?? Object.fromEntries(ids.map((id) => [`cred_${id}`, `secret-of-${id}`]));
  const core: GaugeCore = await createGaugeCore({
    env,
    sources,
    data,
    service: okCollector,
    credentialOf: async (ref) => credentials[ref] ?? null,
    options: {
      poolSize: opts.poolSize ?? 4,
      timeoutMs: opts.timeoutMs ?? 5_000,
      allowedHosts: opts.allowedHosts ?? 'any',
    },
    collectors: opts.collectors,
    clock: fakeClock(now),
  });
  return { dir, env, core, sources, data, ids };
}

test(
  '20 sources refreshed at once never run more than 4 at a time, and outcomes come back in requested ' + 'order',
  async () => {
    let running = 0;
    let peak = 0;
    const seen: string[] = [];
    const slow: Collector = {
      providerId: 'openai',
      async collect(ctx) {
        running++;
        peak = Math.max(peak, running);
        seen.push(ctx.credential!);
        // Several event-loop turns, so that an unbounded pool would have started everything meanwhile.
        for (let i = 0; i < 5; i++) await new Promise(setImmediate);
        running--;
        return { readings: [reading(ctx, 2)] };
      },
    };
    const { core, ids, data } = await setup({ collectors: { openai: slow }, accounts: 20 });
    const requested = [...ids].reverse();
    const outcomes = await core.refresh(requested);
    assert.equal(peak, 4);
    assert.deepEqual(
      outcomes.map((o) => o.sourceId),
      requested,
    );
    assert.ok(outcomes.every((o) => o.ok && o.readings === 1 && o.code === null));
    assert.equal(seen.length, 20);
    assert.ok(
      seen.every((c, i) => c === `secret-of-${requested[i]}`),
      'each collector got its own credential from the vault reader',
    );
    assert.equal(data.readings().length, 20);
  },
);

test('a hung source is abandoned at its time limit; the sources queued behind it still run', async () => {
  const events: string[] = [];
  let hungSignal: AbortSignal | null = null;
  const collector: Collector = {
    providerId: 'openai',
    async collect(ctx) {
      if (ctx.accountId === 'acct_00') {
        hungSignal = ctx.signal;
        events.push('hung started');
        return new Promise(() => undefined); // ignores its signal and never settles
      }
      events.push(`${ctx.accountId} started; hung aborted=${hungSignal?.aborted}`);
      return { readings: [reading(ctx, 3)] };
    },
  };
  const { core, ids } = await setup({ collectors: { openai: collector }, accounts: 3, poolSize: 1, timeoutMs: 50 });
  const outcomes = await core.refresh(ids);
  assert.deepEqual(
    outcomes.map((o) => [o.sourceId, o.ok, o.code]),
    [
      ['acct_00', false, 'timeout'],
      ['acct_01', true, null],
      ['acct_02', true, null],
    ],
  );
  // With one slot, the others could start only once the hung source's slot was released at its limit.
  assert.deepEqual(events, [
    'hung started',
    'acct_01 started; hung aborted=true',
    'acct_02 started; hung aborted=true',
  ]);
});

test('a failing source returns a redacted outcome and keeps its last good snapshot', async () => {
  let fail: unknown = null;
  const collector: Collector = {
    providerId: 'openai',
    async collect(ctx) {
      if (fail) throw fail;
      return { readings: [reading(ctx, 7)] };
    },
  };
  const { core, ids, data } = await setup({ collectors: { openai: collector }, accounts: 1 });
  assert.equal((await core.refresh(ids))[0]!.ok, true);
  fail = new CollectorError('auth_failed', 'key sk-proj-ABCDEFGHIJKLMNOP refused for ada@example.com', {
    upstreamStatus: 401,
  });
  const [failed] = await core.refresh(ids);
  assert.equal(failed!.code, 'auth_failed');
  assert.ok(
    !failed!.message!.includes('sk-proj-ABCDEFGHIJKLMNOP') && !failed!.message!.includes('ada@'),
    failed!.message!,
  );
  assert.equal(data.reading(ids[0]!)!.reading.windows[0]!.used, 7, 'the last good reading stays');
  assert.equal(data.state(ids[0]!)!.state.consecutiveFailures, 1);

  fail = new Error('ENOENT: /home/ada/.secret/file');
  const [crashed] = await core.refresh(ids);
  assert.equal(crashed!.code, 'upstream_error');
  assert.ok(!crashed!.message!.includes('/home/ada'), 'an unknown throw shows no cause text');
  assert.equal(data.state(ids[0]!)!.state.consecutiveFailures, 2);
});

test(
  'what a collector returns is checked: its readings belong to the account, text is bounded and ' + 'redacted',
  async () => {
    const collector: Collector = {
      providerId: 'openai',
      async collect(ctx) {
        const r = reading(ctx, 5);
        r.accountId = 'someone-else';
        r.windows[0]!.id = 'window-of-ada@example.com';
        r.windows[0]!.used = Number.NaN;
        return { readings: [r], identity: 'org-SENTINELORG123', state: { offset: 42 } };
      },
    };
    const { core, ids, data, dir, env } = await setup({ collectors: { openai: collector }, accounts: 1 });
    await core.refresh(ids);
    const stored = data.reading(ids[0]!)!.reading;
    assert.equal(stored.accountId, ids[0]);
    assert.equal(stored.windows[0]!.id, '@example.com');
    assert.equal(stored.windows[0]!.used, null);
    const state = data.state(ids[0]!)!;
    assert.deepEqual(state.cursor, { offset: 42 });
    assert.match(state.identityHash!, /^[0-9a-f]{64}$/);
    await env.root.flushed;
    assert.ok(!readFileSync(join(dir, STORE_FILE)).includes('SENTINELORG123'), 'the identity itself is never stored');

    // Not shaped like a result at all: a failure, and the reading stored before stays.
    collector.collect = async (ctx) => ({
      readings: [{ ...reading(ctx, 9), source: 'x'.repeat(100_000) as never }],
      statuses: [{ components: [null] } as never],
    });
    const [bad] = await core.refresh(ids);
    assert.equal(bad!.code, 'malformed');
    assert.equal(data.reading(ids[0]!)!.reading.windows[0]!.id, '@example.com');
    collector.collect = async (ctx) => ({
      readings: [{ ...reading(ctx, 9), source: 'x'.repeat(100_000) as never, confidence: 'sure' as never }],
    });
    await core.refresh(ids);
    const fixed = data.reading(ids[0]!)!.reading;
    assert.deepEqual(
      [fixed.source, fixed.confidence, fixed.windows[0]!.used],
      ['polled', 'low', 9],
      'values outside the vocabulary are replaced, not stored',
    );
  },
);

test('no credential, no collector, or a host outside the allowed set: the collector is never called', async () => {
  let calls = 0;
  const counting: Collector = {
    providerId: 'openai',
    collect: async (ctx) => (calls++, { readings: [reading(ctx, 1)] }),
  };
  const noCred = await setup({ collectors: { openai: counting }, accounts: 1, credentials: {} });
  assert.deepEqual(
    (await noCred.core.refresh(noCred.ids)).map((o) => o.code),
    ['not_configured'],
  );
  const noCollector = await setup({ collectors: {}, accounts: 1 });
  assert.deepEqual(
    (await noCollector.core.refresh(noCollector.ids)).map((o) => o.code),
    ['not_configured'],
  );
  const loopback = await setup({ collectors: { openai: counting }, accounts: 2, allowedHosts: 'loopback' });
  await loopback.env.commit(() =>
    loopback.sources.stagePut({ ...loopback.sources.get('acct_01')!, config: { baseUrl: 'https://api.openai.com' } }),
  );
  assert.deepEqual(
    (await loopback.core.refresh(loopback.ids)).map((o) => o.code),
    [null, 'unreachable'],
  );
  assert.equal(calls, 1, 'only the loopback source ran');
});

test('a source deleted while it is collected leaves nothing behind', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const collector: Collector = {
    providerId: 'openai',
    async collect(ctx) {
      started();
      await gate;
      return { readings: [reading(ctx, 1)] };
    },
  };
  const { core, ids, data, env, sources } = await setup({ collectors: { openai: collector }, accounts: 1 });
  const refresh = core.refresh(ids);
  await running;
  await env.commit(() => sources.stageRemove(ids[0]!));
  release();
  await refresh;
  assert.equal(data.reading(ids[0]!), undefined);
  assert.equal(data.state(ids[0]!), undefined);
});

test(
  'rate-limit headers seen on traffic become live_headers readings, only while Gauge and the source are ' + 'on',
  async () => {
    const { core, data, env, sources } = await setup({ collectors: {} });
    const at = Date.UTC(2026, 5, 1, 12);
    const openai = {
      providerRecordId: 'openai',
      providerId: 'openai',
      at,
      fields: {
        'x-ratelimit-limit-requests': '500',
        'x-ratelimit-remaining-requests': '499',
        'x-ratelimit-reset-requests': '1m30s',
        'x-ratelimit-limit-tokens': '30000',
        'x-ratelimit-remaining-tokens': '29000',
      },
    };
    core.traffic(1, [openai]);
    await env.root.flushed;
    assert.equal(data.reading('live-headers.openai'), undefined, 'nothing is recorded while Gauge is off');
    core.configure(true, 90);
    const anthropic = {
      providerRecordId: 'claude',
      providerId: 'anthropic',
      at,
      fields: {
        'anthropic-ratelimit-input-tokens-limit': '400000',
        'anthropic-ratelimit-input-tokens-remaining': '100000',
        'anthropic-ratelimit-input-tokens-reset': '2026-06-01T12:01:00Z',
      },
    };
    core.traffic(2, [openai, anthropic]);
    await env.commit(() => undefined);
    const o = data.reading('live-headers.openai')!.reading;
    assert.equal(o.source, 'live_headers');
    assert.deepEqual(
      o.windows.map((w) => [w.kind, w.used, w.limit, w.remaining, w.resetsAt]),
      [
        ['requests', 1, 500, 499, '2026-06-01T12:01:30.000Z'],
        ['tokens', 1000, 30000, 29000, null],
      ],
    );
    const a = data.reading('live-headers.claude')!.reading;
    assert.equal(a.providerId, 'anthropic');
    assert.deepEqual(
      a.windows.map((w) => [w.kind, w.utilization, w.resetsAt]),
      [['input_tokens', 0.75, '2026-06-01T12:01:00.000Z']],
    );

    await env.commit(() => sources.stagePut({ ...sources.get('live-headers')!, enabled: false }));
    core.traffic(1, [{ ...openai, fields: { ...openai.fields, 'x-ratelimit-remaining-requests': '1' } }]);
    await env.commit(() => undefined);
    assert.equal(
      data.reading('live-headers.openai')!.reading.windows[0]!.remaining,
      499,
      'a disabled source records nothing',
    );
    await core.close();
  },
);

test(
  'retention prunes history snapshots and activity buckets, keeps current readings; activity adds up across ' + 'runs',
  async () => {
    const day = 86_400_000;
    const bucket = (hour: string, inputTokens: number) => ({
      hour,
      sourceId: 'x',
      providerId: 'x',
      model: 'm',
      project: 'p',
      workspace: null,
      session: 's1',
      requests: 1,
      inputTokens,
      outputTokens: 2,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    });
    let age = 100;
    const collector: Collector = {
      providerId: 'openai',
      async collect(ctx) {
        const r = reading(ctx, age);
        r.collectedAt = new Date(ctx.now().getTime() - age * day).toISOString();
        const recent = new Date(ctx.now().getTime() - day).toISOString();
        return {
          readings: [r],
          activity: [bucket(recent, 10), bucket(new Date(ctx.now().getTime() - 100 * day).toISOString(), 5)],
        };
      },
    };
    const { core, ids, data } = await setup({ collectors: { openai: collector }, accounts: 1 });
    await core.refresh(ids);
    age = 1;
    await core.refresh(ids);
    assert.equal([...data.history(0, ids)].length, 2);
    assert.equal(data.activityCount(), 2, 'the same hour and dimensions add into one bucket');
    assert.equal(await core.prune(), 0, 'nothing is pruned before the retention is known');
    core.configure(false, 30);
    assert.equal(await core.prune(), 0, 'configure already pruned');
    assert.deepEqual(
      [...data.history(0, ids)].map((h) => h.reading.windows[0]!.used),
      [1],
    );
    assert.equal(data.activityCount(), 1);
    assert.equal(data.reading(ids[0]!)!.reading.windows[0]!.used, 1);
  },
);
