import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { GaugeSourceState } from '../../../protocol/gauge-messages.ts';
import { createScheduler, planNext, type ScheduleTimes } from '../../../workers/gauge/scheduler.ts';
import { fakeClock } from './fake-clock.ts';

const MIN = 60_000;
const times: ScheduleTimes = {
  baseMs: 10 * MIN,
  activeMs: 2 * MIN,
  maxBackoffMs: 60 * MIN,
  activeWindowMs: 5 * MIN,
  firstRunMs: 1_000,
};

/** A scheduler over in-memory state; `results` decides each run's outcome, as the engine would store it. */
function harness(results: (id: string, n: number) => { ok: boolean; retryAfterMs?: number }) {
  const clock = fakeClock();
  const states = new Map<string, GaugeSourceState>();
  const runs: { id: string; at: number }[] = [];
  let ids = ['a'];
  const scheduler = createScheduler({
    clock,
    times,
    due: () => ids,
    state: (id) => states.get(id),
    async collect(id) {
      const n = runs.filter((r) => r.id === id).length;
      runs.push({ id, at: clock.now() });
      const r = results(id, n);
      const prev = states.get(id);
      const s: GaugeSourceState = {
        lastOutcome: r.ok ? 'ok' : 'upstream_error',
        lastRunAt: clock.now(),
        lastSuccessAt: r.ok ? clock.now() : (prev?.lastSuccessAt ?? null),
        lastFailureAt: r.ok ? (prev?.lastFailureAt ?? null) : clock.now(),
        consecutiveFailures: r.ok ? 0 : (prev?.consecutiveFailures ?? 0) + 1,
        retryAfterMs: r.retryAfterMs ?? null,
        nextRunAt: null,
      };
      s.nextRunAt = planNext(s, clock.now(), scheduler.isActive(), times);
      states.set(id, s);
    },
  });
  /** Moves the clock and lets each run's completion re-arm the timer. */
  async function advance(ms: number, step = 1_000) {
    for (let done = 0; done < ms; done += step) {
      clock.advance(Math.min(step, ms - done));
      await new Promise(setImmediate);
    }
  }
  return { clock, scheduler, runs, advance, setIds: (next: string[]) => (ids = next) };
}

const gaps = (runs: { at: number }[]) => runs.slice(1).map((r, i) => (r.at - runs[i]!.at) / MIN);

test(
  'nothing runs while Gauge is off; once on, a source runs after its first delay and then every base ' + 'interval',
  async () => {
    const h = harness(() => ({ ok: true }));
    await h.advance(30 * MIN, 30_000);
    assert.equal(h.runs.length, 0);
    h.scheduler.setEnabled(true);
    await h.advance(1_000);
    assert.equal(h.runs.length, 1);
    await h.advance(35 * MIN, 30_000);
    assert.deepEqual(gaps(h.runs), [10, 10, 10]);
    h.scheduler.setEnabled(false);
    await h.advance(60 * MIN, 60_000);
    assert.equal(h.runs.length, 4);
  },
);

test('gateway traffic shortens the interval to the active one, and it lengthens again when traffic stops', async () => {
  const h = harness(() => ({ ok: true }));
  h.scheduler.setEnabled(true);
  await h.advance(1_000);
  h.scheduler.traffic();
  await h.advance(4 * MIN, 30_000);
  assert.deepEqual(gaps(h.runs), [2, 2]);
  await h.advance(30 * MIN, 30_000);
  // The run planned while traffic still counted keeps its short wait; after that, the base interval.
  assert.deepEqual(gaps(h.runs), [2, 2, 2, 10, 10]);
});

test('failures back off exponentially up to the cap, and one success returns to the base interval', async () => {
  const h = harness((_, n) => ({ ok: n >= 6 }));
  h.scheduler.setEnabled(true);
  await h.advance(1_000);
  await h.advance(6 * 60 * MIN, 60_000);
  // Waits after failures 1..6: 10, 20, 40, 60 (capped), 60, 60; then success.
  assert.deepEqual(gaps(h.runs).slice(0, 7), [10, 20, 40, 60, 60, 60, 10]);
});

test('a Retry-After longer than the interval is a floor under the next run', async () => {
  const h = harness((_, n) =>
    n === 0 ? { ok: false, retryAfterMs: 45 * MIN } : n === 1 ? { ok: true, retryAfterMs: 25 * MIN } : { ok: true },
  );
  h.scheduler.setEnabled(true);
  await h.advance(1_000);
  // Traffic would pull a healthy source in; it may not pull it inside a Retry-After.
  h.scheduler.traffic();
  await h.advance(90 * MIN, 30_000);
  assert.deepEqual(gaps(h.runs).slice(0, 2), [45, 25]);
});

test('a source that is no longer due is not run, and the timer follows the set of sources', async () => {
  const h = harness(() => ({ ok: true }));
  h.scheduler.setEnabled(true);
  h.setIds([]);
  h.scheduler.rearm();
  await h.advance(20 * MIN, 60_000);
  assert.equal(h.runs.length, 0);
  assert.equal(h.clock.pending(), 0);
  h.setIds(['b']);
  h.scheduler.rearm();
  await h.advance(2_000);
  assert.deepEqual(
    h.runs.map((r) => r.id),
    ['b'],
  );
  h.scheduler.close();
  await h.advance(60 * MIN, 60_000);
  assert.equal(h.runs.length, 1);
});
