import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { UsageEvent } from '../../protocol/gateway.ts';
import type { UsageFilter } from '../../protocol/http/usage.ts';
import { PRICE_DATABASE } from '../../state/price-index.ts';
import { openStoreEnv, type StoreEnv } from '../../store/env.ts';
import { USAGE_DBS, usageKey } from '../../store/usage-layout.ts';
import { usageRepo, usageWriter, type UsageRepo } from '../../store/usage-repo.ts';
import { createPending, foldRecord } from '../../workers/meter/aggregate.ts';
import { removeDirs, report, tempDataDir, usageEvent } from '../helpers/usage.ts';

// The repository's reads over rows written by the meter's writer (without the worker: the folding and the
// commit are the same functions the worker runs).

const dirs: string[] = [];
let env: StoreEnv;
let repo: UsageRepo;

function write(rows: [day: string, event: Partial<UsageEvent>][]): void {
  const p = createPending();
  for (const [day, over] of rows) foldRecord(p, usageEvent(over), day);
  usageWriter(env).commit(p);
}

const range = (from: string, to: string, over: Partial<UsageFilter> = {}): UsageFilter => ({ from, to, ...over });
const JAN = range('2026-01-01', '2026-01-31');

before(() => {
  env = openStoreEnv(tempDataDir(dirs));
  repo = usageRepo(env);
  write([
    ['2025-12-31', { usage: report({ totalTokens: 1000 }) }],
    ['2026-01-01', { usage: report({ costUsd: 0.5, toolCalls: { search: 3, fetch: 1 } }) }],
    ['2026-01-01', { tokenId: 'tok_b', usage: report({ totalTokens: 100, toolCalls: { fetch: 3 } }) }],
    [
      '2026-01-05',
      {
        providerId: 'anthropic',
        modelId: 'anthropic/claude',
        usage: report({ totalTokens: 40, costUsd: 0.25, toolCalls: { search: 1 } }),
      },
    ],
    ['2026-01-05', { modelId: null, op: 'responses.get', usage: null }],
    ['2026-01-31', { outcome: 'failed', usage: report({ totalTokens: 7 }) }],
    ['2026-02-01', { usage: report({ totalTokens: 2000 }) }],
  ]);
});
after(async () => {
  await env.close();
  removeDirs(dirs);
});

describe('usage repository per provider key', () => {
  it('groups by key the calls of keyed providers only, filtered as any breakdown', () => {
    const keyed = range('2026-03-01', '2026-03-31');
    write([
      ['2026-03-02', { credentialId: 'cred_a', usage: report({ totalTokens: 30 }) }],
      ['2026-03-02', { credentialId: 'cred_b', usage: report({ totalTokens: 20 }) }],
      ['2026-03-03', { credentialId: 'cred_a', tokenId: 'tok_b', usage: report({ totalTokens: 5 }) }],
      ['2026-03-03', { usage: report({ totalTokens: 900 }) }],
    ]);
    assert.deepEqual(
      repo.breakdown(keyed, 'credential', 50).data.map((r) => [r.providerId, r.credentialId, r.totalTokens]),
      [
        ['openai', 'cred_a', 35],
        ['openai', 'cred_b', 20],
      ],
    );
    const byToken = repo.breakdown({ ...keyed, tokenId: 'tok_b' }, 'credential', 50);
    assert.deepEqual(
      byToken.data.map((r) => [r.credentialId, r.totalTokens]),
      [['cred_a', 5]],
    );
    // The other views are unchanged: a call counts once in them, keyed or not.
    assert.equal(repo.summary(keyed).totals.totalTokens, 955);
  });
});

describe('usage repository', () => {
  it('reads exactly the days of the range, both ends included', () => {
    const s = repo.summary(JAN);
    assert.equal(s.totals.requests, 5);
    assert.equal(s.totals.failedRequests, 1);
    assert.equal(s.totals.totalTokens, 15 + 100 + 40 + 7);
    assert.equal(s.totals.costUsd, 0.75);
    assert.equal(s.toolCalls, 8);
    assert.equal(s.activeDays, 3);
    assert.equal(repo.summary(range('2026-01-02', '2026-01-04')).totals.requests, 0);
    assert.equal(repo.summary(range('2026-01-02', '2026-01-04')).totals.costUsd, null);
  });

  it('filters by provider, model and token; a model filter leaves out calls without a model', () => {
    assert.equal(repo.summary(range('2026-01-01', '2026-01-31', { providerId: 'anthropic' })).totals.requests, 1);
    assert.equal(repo.summary(range('2026-01-01', '2026-01-31', { modelId: 'openai/gpt-4o' })).totals.requests, 3);
    assert.equal(repo.summary(range('2026-01-01', '2026-01-31', { tokenId: 'tok_b' })).totals.totalTokens, 100);
    assert.equal(
      repo.summary(range('2026-01-01', '2026-01-31', { tokenId: 'tok_b', providerId: 'anthropic' })).totals.requests,
      0,
    );
  });

  it('answers daily buckets ascending, omitting days without traffic', () => {
    assert.deepEqual(
      repo.daily(JAN).map((d) => [d.day, d.requests, d.totalTokens]),
      [
        ['2026-01-01', 2, 115],
        ['2026-01-05', 2, 40],
        ['2026-01-31', 1, 7],
      ],
    );
  });

  it('groups the breakdown by each dimension, ranked by total tokens', () => {
    const byModel = repo.breakdown(JAN, 'model', 50);
    assert.deepEqual(
      byModel.data.map((r) => [r.modelId, r.totalTokens]),
      [
        ['openai/gpt-4o', 122],
        ['anthropic/claude', 40],
        [null, 0],
      ],
    );
    assert.deepEqual(Object.keys(byModel.data[0]!).slice(0, 2), ['modelId', 'requests']);
    assert.deepEqual(
      repo.breakdown(JAN, 'provider', 50).data.map((r) => [r.providerId, r.requests]),
      [
        ['openai', 4],
        ['anthropic', 1],
      ],
    );
    assert.deepEqual(
      repo.breakdown(JAN, 'token', 50).data.map((r) => [r.tokenId, r.totalTokens]),
      [
        ['tok_b', 100],
        ['tok_a', 62],
      ],
    );
    const pm = repo.breakdown(JAN, 'provider_model', 50).data[0]!;
    assert.equal(pm.providerId, 'openai');
    assert.equal(pm.modelId, 'openai/gpt-4o');
    assert.equal(pm.tokenId, undefined);
  });

  it('cuts the breakdown at the limit and says there is more', () => {
    const page = repo.breakdown(JAN, 'model', 2);
    assert.equal(page.data.length, 2);
    assert.equal(page.hasMore, true);
    assert.equal(repo.breakdown(JAN, 'model', 3).hasMore, false);
  });

  it('ranks tools by call count, names breaking ties', () => {
    assert.deepEqual(repo.tools(JAN, 20), {
      data: [
        { name: 'fetch', calls: 4 },
        { name: 'search', calls: 4 },
      ],
      hasMore: false,
    });
    assert.deepEqual(repo.tools(range('2026-01-01', '2026-01-31', { providerId: 'anthropic' }), 20).data, [
      { name: 'search', calls: 1 },
    ]);
    assert.deepEqual(repo.tools(JAN, 1), { data: [{ name: 'fetch', calls: 4 }], hasMore: true });
  });
});

describe('usage repository: Smart Route and acceleration rows', () => {
  const DAY = '2026-03-01';
  const R = range(DAY, DAY);
  before(() => {
    const fast = { packSlug: 'coding', routeId: 'fast', fallback: false, fallbackReason: null };
    write([
      [DAY, { route: fast }],
      [DAY, { route: fast }],
      [
        DAY,
        {
          route: { packSlug: 'coding', routeId: 'fast', fallback: true, fallbackReason: 'rate_limited' },
          providerId: 'anthropic',
          modelId: 'anthropic/claude',
        },
      ],
      [
        DAY,
        {
          modelId: 'local/llama',
          providerId: 'local',
          usage: report({ outputTokens: 100 }),
          acceleration: { mode: 'none', draftModelId: null, generationMs: 1000 },
        },
      ],
      [
        DAY,
        {
          modelId: 'local/llama',
          providerId: 'local',
          usage: report({ outputTokens: 300 }),
          acceleration: {
            mode: 'draft',
            draftModelId: 'local/tiny',
            generationMs: 1500,
            draftTokens: 200,
            acceptedDraftTokens: 150,
          },
        },
      ],
      [
        DAY,
        {
          modelId: 'local/qwen',
          providerId: 'local',
          usage: report({ outputTokens: 500 }),
          acceleration: { mode: 'draft', draftModelId: 'local/tiny', generationMs: 1000 },
        },
      ],
      [
        DAY,
        {
          modelId: 'local/qwen',
          providerId: 'local',
          usage: report({ outputTokens: 900 }),
          acceleration: { mode: 'none', draftModelId: null, generationMs: 0 },
        },
      ],
    ]);
  });

  it('ranks route rows by request count with their fallback status and reason', () => {
    const page = repo.routes(R, 50);
    assert.deepEqual(
      page.data.map((r) => [r.packSlug, r.routeId, r.providerId, r.modelId, r.fallback, r.fallbackReason, r.requests]),
      [
        ['coding', 'fast', 'openai', 'openai/gpt-4o', false, null, 2],
        ['coding', 'fast', 'anthropic', 'anthropic/claude', true, 'rate_limited', 1],
      ],
    );
    assert.equal(repo.routes(R, 1).hasMore, true);
  });

  it('puts accelerated rows first, then ranks by output tokens', () => {
    const rows = repo.acceleration(R, 50).data;
    assert.deepEqual(
      rows.map((r) => [r.modelId, r.mode, r.accelerated, r.outputTokens]),
      [
        ['local/qwen', 'draft', true, 500],
        ['local/llama', 'draft', true, 300],
        ['local/qwen', 'none', false, 900],
        ['local/llama', 'none', false, 100],
      ],
    );
  });

  it('computes speedup and time saved only against a same-model baseline with tokens and time', () => {
    const rows = repo.acceleration(R, 50).data;
    const llama = rows.find((r) => r.modelId === 'local/llama' && r.accelerated)!;
    // Baseline 0.1 token/ms; accelerated 0.2 token/ms; 300 tokens would have taken 3000 ms.
    assert.equal(llama.speedup, 2);
    assert.equal(llama.estimatedTimeSavedMs, 1500);
    assert.equal(llama.draftTokens, 200);
    assert.equal(llama.draftAcceptance, 0.75);
    const qwen = rows.find((r) => r.modelId === 'local/qwen' && r.accelerated)!;
    assert.equal(qwen.speedup, null, 'the qwen baseline reported no generation time');
    assert.equal(qwen.estimatedTimeSavedMs, null);
    assert.equal(qwen.draftTokens, null);
    assert.equal(qwen.draftAcceptance, null);
    const base = rows.find((r) => r.modelId === 'local/llama' && !r.accelerated)!;
    assert.equal(base.speedup, null);
    assert.equal(base.draftModelId, null);
  });

  it('needs the baseline inside the range and inside the filters', () => {
    write([
      [
        '2026-03-02',
        {
          modelId: 'local/llama',
          providerId: 'local',
          usage: report({ outputTokens: 300 }),
          acceleration: { mode: 'draft', draftModelId: 'local/tiny', generationMs: 1500 },
        },
      ],
    ]);
    const nextDay = repo.acceleration(range('2026-03-02', '2026-03-02'), 50).data;
    assert.equal(nextDay.length, 1);
    assert.equal(nextDay[0]!.speedup, null);
    const both = repo.acceleration(range(DAY, '2026-03-02', { modelId: 'local/llama' }), 50).data;
    assert.equal(both[0]!.speedup, 2);
    assert.equal(both[0]!.requests, 2);
  });
});

describe('usage repository: pruning', () => {
  it("removes every table's rows before the day and nothing else", async () => {
    const local = openStoreEnv(tempDataDir(dirs));
    const p = createPending();
    for (const day of ['2024-05-01', '2024-05-02', '2024-05-03']) {
      foldRecord(
        p,
        usageEvent({
          usage: report({ toolCalls: { t: 1 } }),
          route: { packSlug: 'p', routeId: 'r', fallback: false, fallbackReason: null },
        }),
        day,
      );
    }
    const writer = usageWriter(local);
    writer.commit(p);
    assert.equal(writer.prune('2024-05-03'), 6);
    assert.equal(writer.prune('2024-05-03'), 0);
    const r = usageRepo(local);
    const all = range('2024-01-01', '2024-12-31');
    assert.deepEqual(
      r.daily(all).map((d) => d.day),
      ['2024-05-03'],
    );
    assert.equal(r.summary(all).toolCalls, 1);
    assert.equal(r.routes(all, 50).data[0]?.requests, 1);
    await local.close();
  });
});

describe('usage repository: estimated cost', () => {
  it('reads rows stored before estimates existed, and adds new calls to them', async () => {
    const local = openStoreEnv(tempDataDir(dirs));
    // A row exactly as the meter wrote it before cache writes and estimates were counted.
    const old = {
      requests: 2,
      failedRequests: 0,
      inputTokens: 20,
      outputTokens: 10,
      cachedInputTokens: 4,
      reasoningTokens: 0,
      totalTokens: 30,
      costUsd: 0.5,
      costReports: 1,
    };
    const key = usageKey('2024-06-01', ['openai', 'openai/gpt-4o', 'tok_a']);
    await local.commit(() => void local.db(USAGE_DBS.daily).put(key, old));
    const r = usageRepo(local);
    const june = range('2024-06-01', '2024-06-30');
    const { costReports: _reports, ...counters } = old;
    assert.deepEqual(r.summary(june).totals, {
      ...counters,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      estimatedUsageRequests: 0,
      providerReportedCostUsd: 0.5,
      estimatedCostUsd: null,
      costEstimated: false,
      pricingSources: [],
    });

    // One more call on that row: no reported cost, an estimate of 0.25 and 3 cache-written tokens.
    const p = createPending();
    foldRecord(
      p,
      { ...usageEvent({ usage: report({ costUsd: null, cacheWriteTokens: 3 }) }), estimatedCostUsd: 0.25 },
      '2024-06-01',
    );
    usageWriter(local).commit(p);
    const t = r.summary(june).totals;
    assert.deepEqual(
      [t.requests, t.cacheWriteTokens, t.costUsd, t.providerReportedCostUsd, t.estimatedCostUsd, t.costEstimated],
      [3, 3, 0.75, 0.5, 0.25, true],
    );
    await local.close();
  });

  it('names what priced the estimates: the catalog, the pinned database, or none in older rows', async () => {
    const local = openStoreEnv(tempDataDir(dirs));
    // A row as the meter wrote it before pricing sources were counted: two estimates of unknown source.
    const old = { requests: 2, estimatedCostUsd: 0.5, estimates: 2, unreportedEstimatedCostUsd: 0.5 };
    const day = '2024-07-01';
    const key = usageKey(day, ['openai', 'openai/gpt-4o', 'tok_a']);
    await local.commit(() => void local.db(USAGE_DBS.daily).put(key, { ...old, unreportedEstimates: 2 }));
    const p = createPending();
    const event = (costUsd: number | null) => usageEvent({ usage: report({ costUsd }) });
    foldRecord(p, { ...event(0.125), estimatedCostUsd: 0.0625, pricingSource: 'catalog' }, day);
    foldRecord(p, { ...event(null), estimatedCostUsd: 0.125, pricingSource: 'catalog' }, day);
    foldRecord(p, { ...event(null), estimatedCostUsd: 0.25, pricingSource: PRICE_DATABASE }, day);
    foldRecord(p, { ...usageEvent({ modelId: 'openai/other' }), estimatedCostUsd: 1, pricingSource: 'catalog' }, day);
    usageWriter(local).commit(p);
    const r = usageRepo(local);
    const july = range(day, day);
    assert.deepEqual(r.summary({ ...july, modelId: 'openai/gpt-4o' }).totals.pricingSources, [
      { source: 'catalog', calls: 2, unreportedCalls: 1, estimatedCostUsd: 0.1875 },
      { source: 'genai-prices@0.1.8', calls: 1, unreportedCalls: 1, estimatedCostUsd: 0.25 },
      { source: null, calls: 2, unreportedCalls: 2, estimatedCostUsd: 0.5 },
    ]);
    // Every answer carries them per row.
    const rows = r.breakdown(july, 'model', 10).data;
    assert.deepEqual(
      rows.map((row) => [row.modelId, row.pricingSources.map((s) => [s.source, s.calls])]),
      [
        [
          'openai/gpt-4o',
          [
            ['catalog', 2],
            ['genai-prices@0.1.8', 1],
            [null, 2],
          ],
        ],
        ['openai/other', [['catalog', 1]]],
      ],
    );
    assert.deepEqual(
      r.daily(july).map((d) => d.pricingSources.length),
      [3],
    );
    await local.close();
  });
});
