import assert from 'node:assert/strict';
import { test } from 'node:test';
import { estimate, modelBase, rankCandidates } from '../../../protocol/gauge-recommend.ts';
import type { GaugeReading } from '../../../protocol/gauge.ts';

// The recommendation's arithmetic on hand-computed cases: burn rate from history snapshots of the same window
// period, projection to the horizon or the reset, the refill check, and the confidence label.

const H = 3_600_000;
const NOW = Date.parse('2026-05-01T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

function snap(
  hoursAgo: number,
  remaining: number,
  resetsAt: number | null = NOW + 48 * H,
  confidence: GaugeReading['confidence'] = 'high',
): GaugeReading {
  return {
    accountId: 'acct_1',
    providerId: 'openrouter',
    collectedAt: iso(NOW - hoursAgo * H),
    source: 'polled',
    confidence,
    windows: [
      {
        id: 'key_limit',
        kind: 'spend',
        period: 'month',
        used: 100 - remaining,
        limit: 100,
        remaining,
        utilization: null,
        resetsAt: resetsAt === null ? null : iso(resetsAt),
      },
      {
        id: 'spend.day',
        kind: 'spend',
        period: '1d',
        used: 3,
        limit: null,
        remaining: null,
        utilization: null,
        resetsAt: null,
      },
    ],
    spend: null,
    credits: null,
  };
}

test(
  '10 units an hour with 60 left: lasts 5 hours, runs out in 6; high confidence from 4 readings over 3 ' + 'hours',
  () => {
    const history = [snap(3, 90), snap(2, 80), snap(1, 70)];
    const five = estimate(snap(0, 60), history, NOW, 5 * H);
    assert.equal(five.verdict, 'lasts');
    assert.equal(five.burnRatePerHour, 10);
    assert.equal(five.projectedRemaining, 10);
    assert.equal(five.confidence, 'high');
    assert.equal(five.window?.id, 'key_limit');
    const seven = estimate(snap(0, 60), history, NOW, 7 * H);
    assert.equal(seven.verdict, 'runs_out');
    assert.equal(seven.projectedRemaining, -10);
    assert.equal(seven.runsOutAt, iso(NOW + 6 * H));
  },
);

test('what is left is extrapolated from the reading time to now', () => {
  const e = estimate(snap(1, 60), [snap(3, 80)], NOW, 2 * H);
  // 10/h; 50 left now; 30 left in two hours.
  assert.equal(e.projectedRemaining, 30);
  assert.equal(e.confidence, 'medium', 'two readings only');
});

test('a snapshot of an earlier period (another reset time) is not part of the burn rate', () => {
  const e = estimate(snap(0, 60), [snap(2, 5, NOW - H)], NOW, H);
  assert.equal(e.verdict, 'unknown');
  assert.equal(e.burnRatePerHour, null);
});

test('a reset inside the horizon: the window must last until it and refill enough for the rest', () => {
  const history = [snap(2, 80, NOW + 2 * H)];
  // 10/h, 60 left; the reset in 2 h leaves 40; the remaining 8 h use 80 of a 100 limit: lasts.
  assert.equal(estimate(snap(0, 60, NOW + 2 * H), history, NOW, 10 * H).verdict, 'lasts');
  // 20 h after the reset need 200 of a 100 limit.
  const long = estimate(snap(0, 60, NOW + 2 * H), history, NOW, 22 * H);
  assert.equal(long.verdict, 'runs_out');
  assert.match(long.reason, /again after its reset/);
});

test('nothing left is runs_out now; no limit window is unknown; no use is lasts', () => {
  assert.equal(estimate(snap(0, 0), [], NOW, H).verdict, 'runs_out');
  const none = { ...snap(0, 10), windows: [snap(0, 10).windows[1]!] };
  assert.equal(estimate(none, [], NOW, H).verdict, 'unknown');
  const idle = estimate(snap(0, 60), [snap(5, 60)], NOW, 7 * 24 * H);
  assert.equal(idle.verdict, 'lasts');
  assert.equal(idle.burnRatePerHour, 0);
});

test('a stale, low-confidence source lowers the label', () => {
  const e = estimate(snap(7, 60, NOW + 48 * H, 'low'), [snap(9, 80, NOW + 48 * H, 'low')], NOW, H);
  assert.equal(e.confidence, 'low');
});

test('candidates: most headroom first, unknown last; model names compare after the last slash', () => {
  const ranked = rankCandidates([
    { accountId: 'b', providerId: 'openai', headroom: null, resetsAt: null, status: 'unknown' },
    { accountId: 'a', providerId: 'openai', headroom: 0.2, resetsAt: null, status: 'ok' },
    { accountId: 'c', providerId: 'openrouter', headroom: 0.9, resetsAt: null, status: 'ok' },
  ]);
  assert.deepEqual(
    ranked.map((c) => c.accountId),
    ['c', 'a', 'b'],
  );
  assert.deepEqual(['openai/gpt-4o', 'pa/gpt-4o', 'gpt-4o'].map(modelBase), ['gpt-4o', 'gpt-4o', 'gpt-4o']);
});
