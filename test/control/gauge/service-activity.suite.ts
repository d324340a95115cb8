import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createServiceActivity, foldCall, type PendingBuckets } from '../../../control/gauge/service-activity.ts';
import { openStoreEnv } from '../../../store/env.ts';
import { activityQuery } from '../../../store/gauge-activity.ts';
import { gaugeDataRepo } from '../../../store/gauge-data-repo.ts';
import { removeDirs, report, tempDataDir, usageEvent } from '../../helpers/usage.ts';

// The `service` source's hourly buckets: each call lands in the UTC hour it ended in, an hour boundary splits
// them, cached input is told apart, unmetered operations count as requests only, and batches add up in LMDB.

const H = 3_600_000;
const T = Date.parse('2026-06-01T10:00:00Z');
const dirs: string[] = [];
after(() => removeDirs(dirs));

test('calls fold into the hour they ended in; the last millisecond of an hour and its first of the next split', () => {
  const into: PendingBuckets = new Map();
  foldCall(
    into,
    usageEvent({
      at: T + H - 1,
      usage: report({ inputTokens: 100, cachedInputTokens: 40, outputTokens: 7, reasoningTokens: 2 }),
    }),
  );
  foldCall(into, usageEvent({ at: T + H, usage: report({ inputTokens: 5, outputTokens: 1 }) }));
  foldCall(into, usageEvent({ at: T + H + 1, op: 'audio.speech', usage: report({ inputTokens: 999 }) }));
  foldCall(into, usageEvent({ at: T + 2 * H - 1, outcome: 'failed', usage: null }));
  const buckets = [...into.values()].flatMap((m) => [...m.values()]);
  const byHour = buckets.map((b) => [
    b.hour,
    b.requests,
    b.inputTokens,
    b.cacheReadTokens,
    b.outputTokens,
    b.reasoningTokens,
  ]);
  assert.deepEqual(byHour, [
    ['2026-06-01T10:00:00.000Z', 1, 60, 40, 7, 2],
    ['2026-06-01T11:00:00.000Z', 3, 3, 2, 1, 1],
  ]);
  const b = buckets[0]!;
  assert.deepEqual(
    [b.sourceId, b.providerId, b.model, b.project, b.workspace, b.session],
    ['service', 'service', 'openai/gpt-4o', null, null, null],
  );
});

test(
  'batches are written on flush and add to what is stored; nothing is kept while off or the source is ' + 'disabled',
  async () => {
    const env = openStoreEnv(tempDataDir(dirs));
    let on = true;
    let sourceOn = true;
    const activity = createServiceActivity({
      env,
      data: gaugeDataRepo(env),
      enabled: () => on,
      sourceEnabled: () => sourceOn,
      flushMs: 3_600_000,
    });
    const read = () =>
      activityQuery(env)({ after: T, before: T + H }, {}, 10, 0, () => 'service').data.map((b) => b.requests);
    activity.record(usageEvent({ at: T + 1 }));
    activity.record(usageEvent({ at: T + 2 }));
    assert.deepEqual(read(), [], 'nothing is written before a flush');
    await activity.flush();
    assert.deepEqual(read(), [2]);
    activity.record(usageEvent({ at: T + 3 }));
    await activity.flush();
    assert.deepEqual(read(), [3]);
    on = false;
    activity.record(usageEvent({ at: T + 4 }));
    assert.equal(activity.pending(), 0);
    on = true;
    sourceOn = false;
    activity.record(usageEvent({ at: T + 5 }));
    await activity.close();
    assert.deepEqual(read(), [3]);
    await env.close();
  },
);
