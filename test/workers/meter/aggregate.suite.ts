import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GatewayOp, UsageReport } from '../../../protocol/gateway.ts';
import type { MeterRecord } from '../../../protocol/meter.ts';
import { parseUsageKey, usageKey } from '../../../store/usage-layout.ts';
import { createPending, dayCache, foldRecord, pendingRows } from '../../../workers/meter/aggregate.ts';

const DAY = '2026-03-14';

function usage(over: Partial<UsageReport> = {}): UsageReport {
  return {
    inputTokens: 10,
    outputTokens: 5,
    cachedInputTokens: 2,
    reasoningTokens: 1,
    totalTokens: 15,
    costUsd: 0.25,
    toolCalls: {},
    ...over,
  };
}

function rec(over: Partial<MeterRecord> = {}): MeterRecord {
  return {
    at: 0,
    tokenId: 'tok_a',
    providerId: 'openai',
    modelId: 'openai/gpt-4o',
    op: 'chat.completions',
    outcome: 'ok',
    usage: usage(),
    ...over,
  };
}

const baseKey = usageKey(DAY, ['openai', 'openai/gpt-4o', 'tok_a']);

describe('foldRecord per provider key (W4.2)', () => {
  it("counts a keyed provider's calls under their key too, and nothing there for a provider without one", () => {
    const p = createPending();
    foldRecord(p, rec({ credentialId: 'cred_a' }), DAY);
    foldRecord(p, rec({ credentialId: 'cred_a' }), DAY);
    foldRecord(p, rec({ credentialId: 'cred_b' }), DAY);
    foldRecord(p, rec(), DAY);
    const key = (c: string) => usageKey(DAY, ['openai', 'openai/gpt-4o', 'tok_a', c]);
    assert.deepEqual(
      [...p.credentials].map(([k, t]) => [k, t.requests]),
      [
        [key('cred_a'), 2],
        [key('cred_b'), 1],
      ],
    );
    assert.equal(p.daily.get(baseKey)!.requests, 4);
  });
});

describe('foldRecord counters', () => {
  it('adds known events up exactly', () => {
    const p = createPending();
    foldRecord(p, rec(), DAY);
    foldRecord(
      p,
      rec({
        usage: usage({
          inputTokens: 100,
          outputTokens: 50,
          totalTokens: 150,
          cachedInputTokens: 0,
          reasoningTokens: 7,
          costUsd: 1.5,
        }),
      }),
      DAY,
    );
    foldRecord(p, rec({ usage: usage({ costUsd: null }) }), DAY);
    assert.deepEqual(p.daily.get(baseKey), {
      requests: 3,
      failedRequests: 0,
      inputTokens: 120,
      outputTokens: 60,
      cachedInputTokens: 4,
      reasoningTokens: 9,
      totalTokens: 180,
      costUsd: 1.75,
      costReports: 2,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      estimatedCostUsd: 0,
      estimates: 0,
      unreportedEstimatedCostUsd: 0,
      unreportedEstimates: 0,
      catalogEstimatedCostUsd: 0,
      catalogEstimates: 0,
      catalogUnreportedEstimates: 0,
      databaseEstimatedCostUsd: 0,
      databaseEstimates: 0,
      databaseUnreportedEstimates: 0,
      estimatedUsageRequests: 0,
    });
  });

  it('keeps estimates apart from reported cost: costUsd is later filled only where no cost was reported', () => {
    const p = createPending();
    foldRecord(p, rec({ estimatedCostUsd: 0.1 }), DAY);
    foldRecord(p, rec({ usage: usage({ costUsd: null, cacheWriteTokens: 3 }), estimatedCostUsd: 0.5 }), DAY);
    foldRecord(p, rec({ usage: usage({ costUsd: null }), estimatedCostUsd: null }), DAY);
    const t = p.daily.get(baseKey)!;
    assert.deepEqual(
      [
        t.costUsd,
        t.costReports,
        t.estimatedCostUsd,
        t.estimates,
        t.unreportedEstimatedCostUsd,
        t.unreportedEstimates,
        t.cacheWriteTokens,
      ],
      [0.25, 1, 0.6, 2, 0.5, 1, 3],
    );
  });

  it('counts the estimates of each pricing source apart; an estimate without a source is in neither', () => {
    const p = createPending();
    // Binary fractions, so the sums are exact.
    foldRecord(p, rec({ estimatedCostUsd: 0.125, pricingSource: 'catalog' }), DAY);
    foldRecord(p, rec({ usage: usage({ costUsd: null }), estimatedCostUsd: 0.25, pricingSource: 'catalog' }), DAY);
    const db = 'genai-prices@0.1.8';
    foldRecord(p, rec({ usage: usage({ costUsd: null }), estimatedCostUsd: 0.5, pricingSource: db }), DAY);
    foldRecord(p, rec({ usage: usage({ costUsd: null }), estimatedCostUsd: 0.25 }), DAY);
    foldRecord(p, rec({ usage: usage({ costUsd: null }), estimatedCostUsd: null, pricingSource: null }), DAY);
    const t = p.daily.get(baseKey)!;
    assert.deepEqual([t.catalogEstimatedCostUsd, t.catalogEstimates, t.catalogUnreportedEstimates], [0.375, 2, 1]);
    assert.deepEqual([t.databaseEstimatedCostUsd, t.databaseEstimates, t.databaseUnreportedEstimates], [0.5, 1, 1]);
    assert.deepEqual([t.estimatedCostUsd, t.estimates, t.unreportedEstimates], [1.125, 4, 3]);
  });

  it('keeps each day, provider, model and token apart', () => {
    const p = createPending();
    foldRecord(p, rec(), DAY);
    foldRecord(p, rec(), '2026-03-15');
    foldRecord(p, rec({ providerId: 'anthropic' }), DAY);
    foldRecord(p, rec({ modelId: 'openai/gpt-5' }), DAY);
    foldRecord(p, rec({ tokenId: 'tok_b' }), DAY);
    foldRecord(p, rec({ modelId: null }), DAY);
    assert.equal(p.daily.size, 6);
    for (const t of p.daily.values()) assert.equal(t.requests, 1);
    assert.ok(p.daily.has(usageKey(DAY, ['openai', null, 'tok_a'])));
  });

  it('counts failed and aborted calls as requests and failures, with the usage reported before the failure', () => {
    const p = createPending();
    foldRecord(p, rec({ outcome: 'failed', usage: null }), DAY);
    foldRecord(
      p,
      rec({ outcome: 'aborted', usage: usage({ inputTokens: 30, outputTokens: 4, totalTokens: 34, costUsd: null }) }),
      DAY,
    );
    foldRecord(p, rec(), DAY);
    const t = p.daily.get(baseKey)!;
    assert.equal(t.requests, 3);
    assert.equal(t.failedRequests, 2);
    assert.equal(t.inputTokens, 40);
    assert.equal(t.outputTokens, 9);
    assert.equal(t.totalTokens, 49);
  });

  it('counts speech, transcription, image edits and rerank as requests only, even with usage present', () => {
    const unmetered: GatewayOp[] = ['audio.speech', 'audio.transcriptions', 'images.edits', 'rerank'];
    for (const op of unmetered) {
      const p = createPending();
      foldRecord(p, rec({ op, usage: usage({ toolCalls: { lookup: 2 } }) }), DAY);
      foldRecord(p, rec({ op, outcome: 'failed', usage: usage() }), DAY);
      assert.deepEqual(
        p.daily.get(baseKey),
        {
          requests: 2,
          failedRequests: 1,
          inputTokens: 0,
          outputTokens: 0,
          cachedInputTokens: 0,
          reasoningTokens: 0,
          totalTokens: 0,
          costUsd: 0,
          costReports: 0,
          cacheWriteTokens: 0,
          cacheWrite1hTokens: 0,
          estimatedCostUsd: 0,
          estimates: 0,
          unreportedEstimatedCostUsd: 0,
          unreportedEstimates: 0,
          catalogEstimatedCostUsd: 0,
          catalogEstimates: 0,
          catalogUnreportedEstimates: 0,
          databaseEstimatedCostUsd: 0,
          databaseEstimates: 0,
          databaseUnreportedEstimates: 0,
          estimatedUsageRequests: 0,
        },
        op,
      );
      assert.equal(p.tools.size, 0, op);
    }
  });

  it('adds nothing for null token fields (image generation without reported usage)', () => {
    const p = createPending();
    const none = usage({
      inputTokens: null,
      outputTokens: null,
      cachedInputTokens: null,
      reasoningTokens: null,
      totalTokens: null,
      costUsd: null,
    });
    foldRecord(p, rec({ op: 'images.generations', usage: none }), DAY);
    foldRecord(
      p,
      rec({
        op: 'images.generations',
        usage: usage({
          inputTokens: 12,
          outputTokens: null,
          totalTokens: 12,
          cachedInputTokens: null,
          reasoningTokens: null,
        }),
      }),
      DAY,
    );
    const t = p.daily.get(baseKey)!;
    assert.equal(t.requests, 2);
    assert.equal(t.inputTokens, 12);
    assert.equal(t.outputTokens, 0);
    assert.equal(t.totalTokens, 12);
    assert.equal(t.cachedInputTokens, 0);
    assert.equal(t.costReports, 1);
  });

  it('ignores counts that are not finite and non-negative', () => {
    const p = createPending();
    foldRecord(
      p,
      rec({
        usage: usage({ inputTokens: Number.NaN, outputTokens: -5, totalTokens: Number.POSITIVE_INFINITY, costUsd: -1 }),
      }),
      DAY,
    );
    const t = p.daily.get(baseKey)!;
    assert.equal(t.inputTokens, 0);
    assert.equal(t.outputTokens, 0);
    assert.equal(t.totalTokens, 0);
    assert.equal(t.costReports, 0);
    assert.equal(t.cachedInputTokens, 2);
  });
});

describe('foldRecord tools, routes and acceleration', () => {
  it('keeps tool names and call counts per day and dimension', () => {
    const p = createPending();
    foldRecord(p, rec({ usage: usage({ toolCalls: { get_weather: 2, search: 1 } }) }), DAY);
    foldRecord(p, rec({ usage: usage({ toolCalls: { get_weather: 3, zero: 0 } }) }), DAY);
    foldRecord(p, rec({ tokenId: 'tok_b', usage: usage({ toolCalls: { get_weather: 1 } }) }), DAY);
    assert.equal(p.tools.get(usageKey(DAY, ['openai', 'openai/gpt-4o', 'tok_a', 'get_weather']))?.calls, 5);
    assert.equal(p.tools.get(usageKey(DAY, ['openai', 'openai/gpt-4o', 'tok_a', 'search']))?.calls, 1);
    assert.equal(p.tools.get(usageKey(DAY, ['openai', 'openai/gpt-4o', 'tok_b', 'get_weather']))?.calls, 1);
    assert.equal(p.tools.size, 3);
  });

  it('aggregates Smart Route rows, with no reason unless the call fell back', () => {
    const p = createPending();
    foldRecord(
      p,
      rec({ route: { packSlug: 'coding', routeId: 'fast', fallback: false, fallbackReason: 'ignored' } }),
      DAY,
    );
    foldRecord(p, rec({ route: { packSlug: 'coding', routeId: 'fast', fallback: false, fallbackReason: null } }), DAY);
    foldRecord(
      p,
      rec({
        outcome: 'failed',
        route: { packSlug: 'coding', routeId: 'fast', fallback: true, fallbackReason: 'rate_limited' },
      }),
      DAY,
    );
    const plain = p.routes.get(usageKey(DAY, ['openai', 'openai/gpt-4o', 'tok_a', 'coding', 'fast', '0', null]))!;
    const fellBack = p.routes.get(
      usageKey(DAY, ['openai', 'openai/gpt-4o', 'tok_a', 'coding', 'fast', '1', 'rate_limited']),
    )!;
    assert.equal(plain.requests, 2);
    assert.equal(plain.totalTokens, 30);
    assert.equal(fellBack.requests, 1);
    assert.equal(fellBack.failedRequests, 1);
    assert.equal(p.routes.size, 2);
    assert.equal(p.daily.get(baseKey)?.requests, 3);
  });

  it('aggregates acceleration rows with generation time, and draft counters only when reported', () => {
    const p = createPending();
    foldRecord(
      p,
      rec({
        acceleration: {
          mode: 'draft',
          draftModelId: 'local/tiny',
          generationMs: 400,
          draftTokens: 20,
          acceptedDraftTokens: 15,
        },
      }),
      DAY,
    );
    foldRecord(p, rec({ acceleration: { mode: 'draft', draftModelId: 'local/tiny', generationMs: 600 } }), DAY);
    foldRecord(p, rec({ acceleration: { mode: 'none', draftModelId: null, generationMs: 900 } }), DAY);
    const draft = p.acceleration.get(usageKey(DAY, ['openai', 'openai/gpt-4o', 'tok_a', 'draft', 'local/tiny']))!;
    assert.equal(draft.requests, 2);
    assert.equal(draft.outputTokens, 10);
    assert.equal(draft.generationMs, 1000);
    assert.equal(draft.draftTokens, 20);
    assert.equal(draft.acceptedDraftTokens, 15);
    assert.equal(draft.draftReports, 1);
    const base = p.acceleration.get(usageKey(DAY, ['openai', 'openai/gpt-4o', 'tok_a', 'none', null]))!;
    assert.equal(base.draftReports, 0);
    assert.equal(base.generationMs, 900);
  });

  it('refuses rows whose key would be too long for LMDB, counting them', () => {
    const p = createPending();
    foldRecord(p, rec({ usage: usage({ toolCalls: { ['t'.repeat(3000)]: 1, ok: 1 } }) }), DAY);
    foldRecord(p, rec({ modelId: 'm'.repeat(3000) }), DAY);
    assert.equal(p.oversized, 2);
    assert.equal(p.tools.size, 1);
    assert.equal(p.daily.get(baseKey)?.requests, 1);
    assert.equal(pendingRows(p), 2);
  });
});

describe('usage keys', () => {
  it('round-trip IDs and names holding the separator and the escape character', () => {
    const parts = ['a|b', 'model/%7C|x', 'tok', 'tool%25|'];
    const key = usageKey(DAY, parts);
    assert.equal(key.split('|').length, 5);
    assert.deepEqual(parseUsageKey(key), { day: DAY, parts });
  });

  it('keep different tuples apart even when their joined text would be equal', () => {
    assert.notEqual(usageKey(DAY, ['a|b', 'c', 't']), usageKey(DAY, ['a', 'b|c', 't']));
  });
});

describe('dayCache', () => {
  it('gives the local day of each timestamp, across midnight in both directions', () => {
    const dayOf = dayCache();
    const noon = new Date(2026, 2, 14, 12).getTime();
    const late = new Date(2026, 2, 14, 23, 59, 59, 999).getTime();
    const next = new Date(2026, 2, 15, 0, 0, 0, 0).getTime();
    assert.equal(dayOf(noon), '2026-03-14');
    assert.equal(dayOf(late), '2026-03-14');
    assert.equal(dayOf(next), '2026-03-15');
    assert.equal(dayOf(noon), '2026-03-14');
    assert.equal(dayOf(new Date(2025, 11, 31, 8).getTime()), '2025-12-31');
  });
});
