import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { localDayOf } from '../../../protocol/local-day.ts';
import type { UsageEvent } from '../../../protocol/gateway.ts';
import type { ModelPricing } from '../../../protocol/http/catalog.ts';
import type { ResolvedPricing } from '../../../state/price-index.ts';
import type { MeterOptions } from '../../../workers/meter/actor.ts';
import { ALL, harness as startHarness, held, recordAll } from '../../helpers/meter-harness.ts';
import { allBytes, localNoon, removeDirs, report, usageEvent } from '../../helpers/usage.ts';

// The real meter worker on a temporary data directory, read back through the repository as the routes do.

const dirs: string[] = [];
after(() => removeDirs(dirs));
const harness = (over?: Partial<MeterOptions>, dir?: string) => startHarness(dirs, over, dir);

describe('meter actor', () => {
  it('commits recorded events that the repository then reads', async () => {
    const h = harness();
    recordAll(h.meter, [
      usageEvent({ usage: report({ toolCalls: { search: 2 } }) }),
      usageEvent({ outcome: 'failed', usage: null }),
      usageEvent({ op: 'audio.speech', usage: report() }),
      usageEvent({ tokenId: 'tok_b', at: localNoon(1) }),
    ]);
    await h.meter.flush();
    const s = h.repo.summary(ALL);
    assert.equal(s.totals.requests, 4);
    assert.equal(s.totals.failedRequests, 1);
    assert.equal(s.totals.inputTokens, 20);
    assert.equal(s.toolCalls, 2);
    assert.equal(s.activeDays, 2);
    assert.deepEqual(
      h.repo.daily(ALL).map((d) => [d.day, d.requests]),
      [
        [localDayOf(localNoon(1)), 1],
        [localDayOf(Date.now()), 3],
      ],
    );
    assert.deepEqual(h.meter.stats(), { recorded: 4, dropped: 0, lost: 0, oversized: 0, restarts: 0, inflight: 0 });
    await h.done();
  });

  it("fixes each call's estimated cost at the catalog price it has when the call is recorded", async () => {
    let price: ModelPricing | null = {
      inputPerMTok: 1,
      outputPerMTok: 2,
      cachedInputPerMTok: 0.5,
      cacheWritePerMTok: null,
      cacheWrite1hPerMTok: null,
      currency: 'USD',
    };
    const h = harness({ priceOf: (id) => (id === 'openai/gpt-4o' ? { pricing: price, source: 'catalog' } : null) });
    // 10 in (2 cached), 5 out: 8 x 1 + 2 x 0.5 + 5 x 2 = 19 micro-dollars.
    recordAll(h.meter, [usageEvent(), usageEvent({ op: 'audio.speech' }), usageEvent({ modelId: null })]);
    price = {
      inputPerMTok: 10,
      outputPerMTok: 20,
      cachedInputPerMTok: null,
      cacheWritePerMTok: null,
      cacheWrite1hPerMTok: null,
      currency: 'USD',
    };
    // The same call at the new price: 10 x 10 + 5 x 20 = 200; the first call keeps its 19.
    recordAll(h.meter, [usageEvent()]);
    await h.meter.flush();
    const t = h.repo.summary(ALL).totals;
    assert.deepEqual(
      [t.requests, t.estimatedCostUsd, t.costUsd, t.providerReportedCostUsd, t.costEstimated],
      [4, 219e-6, 219e-6, null, true],
    );
    await h.done();
  });

  it('records what priced each estimate: the catalog or the price database', async () => {
    const pricing: ModelPricing = {
      inputPerMTok: 1,
      outputPerMTok: 2,
      cachedInputPerMTok: null,
      cacheWritePerMTok: null,
      cacheWrite1hPerMTok: null,
      currency: 'USD',
    };
    const sources: Record<string, ResolvedPricing> = {
      'openai/gpt-4o': { pricing, source: 'catalog' },
      'openai/gpt-4o-mini': { pricing, source: 'genai-prices@0.1.8' },
      'openai/unknown': { pricing: null, source: null },
    };
    const h = harness({ priceOf: (id) => sources[id] ?? null });
    // 10 in, 5 out: 10 x 1 + 5 x 2 = 20 micro-dollars a call.
    recordAll(h.meter, [
      usageEvent(),
      usageEvent({ modelId: 'openai/gpt-4o-mini', usage: report({ costUsd: 0.5 }) }),
      usageEvent({ modelId: 'openai/gpt-4o-mini' }),
      usageEvent({ modelId: 'openai/unknown' }),
    ]);
    await h.meter.flush();
    assert.deepEqual(h.repo.summary(ALL).totals.pricingSources, [
      { source: 'catalog', calls: 1, unreportedCalls: 1, estimatedCostUsd: 20e-6 },
      { source: 'genai-prices@0.1.8', calls: 2, unreportedCalls: 1, estimatedCostUsd: 40e-6 },
    ]);
    await h.done();
  });

  it('keeps aggregates across a restart and adds to them', async () => {
    const first = harness();
    recordAll(first.meter, [usageEvent(), usageEvent()]);
    await first.done();
    const second = harness({}, first.dir);
    assert.equal(second.repo.summary(ALL).totals.requests, 2);
    recordAll(second.meter, [usageEvent({ usage: report({ inputTokens: 100 }) })]);
    await second.meter.flush();
    const s = second.repo.summary(ALL).totals;
    assert.equal(s.requests, 3);
    assert.equal(s.inputTokens, 120);
    await second.done();
  });

  it('restarts a killed worker; what it committed survives and only uncommitted records are lost', async () => {
    // Nothing commits on a timer here: the second batch is posted on the next turn and folded by the worker
    // (awaited, so that the kill finds it there rather than in transit), but certainly not committed when killed.
    const h = harness({ commitMs: 60_000, postEveryMs: 0 });
    recordAll(
      h.meter,
      Array.from({ length: 5 }, () => usageEvent()),
    );
    await h.meter.flush();
    recordAll(
      h.meter,
      Array.from({ length: 3 }, () => usageEvent()),
    );
    // Folded by the worker (processed: nothing in flight), so certainly in it when killed, not in transit.
    const deadline = Date.now() + 10_000;
    while (h.meter.stats().inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
    assert.equal(h.meter.stats().inflight, 0, 'the second batch reached the worker');
    const replacement = h.nextWorker();
    await h.current().terminate();
    await held(replacement);
    assert.equal(h.repo.summary(ALL).totals.requests, 5);
    recordAll(h.meter, [usageEvent(), usageEvent()]);
    await h.meter.flush();
    assert.equal(h.repo.summary(ALL).totals.requests, 7);
    const stats = h.meter.stats();
    assert.equal(stats.restarts, 1);
    assert.equal(stats.lost, 3);
    const line = h.lines.find((l) => l['msg'] === 'usage meter worker stopped; restarting it');
    assert.equal(line?.['lostRecords'], 3);
    await h.done();
  });

  it('never tears a commit when the worker is killed while records stream in', async () => {
    const h = harness({ commitMs: 2 });
    const replacement = h.nextWorker();
    for (let round = 0; round < 60; round++) {
      if (round === 10) void h.current().terminate();
      recordAll(
        h.meter,
        Array.from({ length: 200 }, () => usageEvent({ usage: report({ toolCalls: { probe: 1 } }) })),
      );
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await held(replacement);
    await h.meter.flush();
    const stats = h.meter.stats();
    const s = h.repo.summary(ALL);
    // Daily rows and tool rows are written in one transaction: a torn commit would split them.
    assert.equal(s.toolCalls, s.totals.requests);
    assert.equal(s.totals.inputTokens, 10 * s.totals.requests);
    assert.ok(s.totals.requests <= stats.recorded, JSON.stringify(stats));
    assert.ok(s.totals.requests >= stats.recorded - stats.lost, JSON.stringify(stats));
    assert.equal(stats.recorded + stats.dropped, 60 * 200);
    assert.equal(stats.restarts, 1);
    await h.done();
  });

  it('records nothing while usage.enabled is false', async () => {
    let enabled = false;
    const h = harness({ enabled: () => enabled });
    recordAll(h.meter, [usageEvent(), usageEvent()]);
    enabled = true;
    recordAll(h.meter, [usageEvent()]);
    await h.meter.flush();
    assert.equal(h.repo.summary(ALL).totals.requests, 1);
    assert.equal(h.meter.stats().recorded, 1);
    assert.equal(h.meter.stats().dropped, 0);
    await h.done();
  });

  it('prunes days older than usage.retentionDays at start and on demand', async () => {
    const seed = harness();
    recordAll(
      seed.meter,
      [10, 5, 2, 0].map((daysAgo) => usageEvent({ at: localNoon(daysAgo), usage: report({ toolCalls: { t: 1 } }) })),
    );
    await seed.done();

    let retention = 6;
    const h = harness({ retentionDays: () => retention }, seed.dir);
    await h.meter.flush();
    const days = () => h.repo.daily(ALL).map((d) => d.day);
    assert.deepEqual(
      days(),
      [5, 2, 0].map((n) => localDayOf(localNoon(n))),
    );
    retention = 3;
    assert.equal(await h.meter.prune(), 2);
    assert.deepEqual(
      days(),
      [2, 0].map((n) => localDayOf(localNoon(n))),
    );
    assert.equal(h.repo.summary(ALL).toolCalls, 2);
    await h.done();
  });

  it('drops and counts records beyond the in-flight bound instead of queueing them, with one warning', async () => {
    const h = harness({ maxInflight: 10 });
    recordAll(
      h.meter,
      Array.from({ length: 100 }, () => usageEvent()),
    );
    assert.equal(h.meter.stats().dropped, 90);
    await h.meter.flush();
    assert.equal(h.repo.summary(ALL).totals.requests, 10);
    const warnings = h.lines.filter((l) => l['msg'] === 'usage meter is full or down; dropping usage records');
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]!['dropped'], 1);
    await h.done();
  });

  it('drops records while the worker is down, without throwing', async () => {
    const h = harness({ commitMs: 60_000 });
    const replacement = h.nextWorker();
    const exited = new Promise((resolve) => h.current().once('exit', resolve));
    await h.current().terminate();
    await exited;
    h.meter.record(usageEvent());
    assert.equal(h.meter.stats().dropped, 1);
    await held(replacement);
    h.meter.record(usageEvent());
    await h.meter.flush();
    assert.equal(h.repo.summary(ALL).totals.requests, 1);
    await h.done();
  });

  it('stores no prompt text, tool arguments or foreign fields: only counters, IDs and tool names', async () => {
    const SENTINEL = 'zz-sentinel-8f3a1c';
    const h = harness();
    const tainted = {
      ...usageEvent({ usage: report({ toolCalls: { positive_control_tool: 1 } }) }),
      prompt: `${SENTINEL} prompt text`,
      headers: { authorization: `Bearer ${SENTINEL}` },
    };
    tainted.usage = {
      ...tainted.usage!,
      toolArguments: { positive_control_tool: `{"q":"${SENTINEL}"}` },
    } as typeof tainted.usage;
    h.meter.record(tainted as UsageEvent);
    await h.done();
    const bytes = allBytes(h.dir);
    assert.ok(bytes.includes('positive_control_tool'), 'the scan reads the stored rows');
    assert.ok(!bytes.includes(SENTINEL));
    assert.ok(!bytes.includes(tainted.requestId), 'no per-request rows');
  });
});
