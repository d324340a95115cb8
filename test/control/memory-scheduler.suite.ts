import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  createMemoryScheduler,
  DEFAULT_RETRY_AFTER_SECONDS,
  EVICT_RETRY_MS,
  type Lease,
  type MemorySchedulerDeps,
  type SchedulerClock,
} from '../../control/scheduler/memory-scheduler.ts';
import { MAX_SESSIONS } from '../../control/scheduler/units.ts';
import { ServiceError } from '../../protocol/errors.ts';

// A clock the test moves: timers fire in due order as `advance` passes them, nothing waits on real time.
function fakeClock(): SchedulerClock & { advance(ms: number): void } {
  let now = 1_000_000;
  let seq = 0;
  const timers = new Map<number, { at: number; run: () => void }>();
  return {
    now: () => now,
    setTimeout(run, ms) {
      timers.set(++seq, { at: now + Math.max(0, ms), run });
      return seq;
    },
    clearTimeout: (handle) => void timers.delete(handle as number),
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const next = [...timers].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
        if (!next) break;
        timers.delete(next[0]);
        now = next[1].at;
        next[1].run();
      }
      now = until;
    },
  };
}

// Lets settled evict() promises and their follow-ups run: a turn of the event loop, not a sleep.
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function harness({
  budget = 100,
  keepAlive = {},
  ...over
}: Partial<MemorySchedulerDeps> & { budget?: number; keepAlive?: Record<string, number> } = {}) {
  const clock = fakeClock();
  const settings = { budget };
  const evictCalls: string[] = [];
  const evicted: string[] = [];
  const queued: [string, number][] = [];
  const heldSeen: number[] = [];
  const waits: number[] = [];
  const loads: string[] = [];
  const s = createMemoryScheduler({
    budgetBytes: () => settings.budget,
    keepAliveMs: (id) => keepAlive[id] ?? 0,
    queueSize: () => 8,
    waitMs: () => 600_000,
    evict: async (id) => void evictCalls.push(id),
    onEvicted: (id, reason) => evicted.push(`${id}:${reason}`),
    onQueued: (id, position) => queued.push([id, position]),
    metrics: {
      heldBytes: (b) => heldSeen.push(b),
      queueWaitMs: (ms) => waits.push(ms),
      loaded: (id) => loads.push(id),
    },
    clock,
    ...over,
  });
  // A model loaded and then idle: released at the clock's current time.
  const idle = async (id: string, bytes: number, session: string | null = null) => {
    const lease = await s.admit(id, bytes, { session });
    lease.loaded();
    lease.release();
  };
  const busy = async (id: string, bytes: number) => {
    const lease = await s.admit(id, bytes);
    lease.loaded();
    return lease;
  };
  return { s, clock, settings, evictCalls, evicted, queued, heldSeen, waits, loads, idle, busy };
}

/** Tracks whether a promise settled, without awaiting it. */
function track<T>(p: Promise<T>) {
  const state: { done: boolean; value?: T; error?: unknown } = { done: false };
  p.then(
    (value) => Object.assign(state, { done: true, value }),
    (error) => Object.assign(state, { done: true, error }),
  );
  return state;
}

const isCode = (code: string) => (err: unknown) => err instanceof ServiceError && err.code === code;
const unit = (h: ReturnType<typeof harness>, id: string) => h.s.residency().find((u) => u.modelId === id);

describe('memory scheduler: admission', () => {
  test('a model that fits is reserved as loading, becomes resident on loaded(), and later admits join it', async () => {
    const h = harness();
    const first = await h.s.admit('a', 40);
    assert.equal(first.loads, true);
    assert.equal(unit(h, 'a')?.state, 'loading');
    assert.deepEqual(h.s.memory(), { budgetBytes: 100, heldBytes: 40, queued: 0 });
    first.loaded();
    const second = await h.s.admit('a', 40);
    assert.equal(second.loads, false);
    assert.equal(unit(h, 'a')?.state, 'resident');
    assert.equal(unit(h, 'a')?.inFlight, 2);
    assert.equal(h.s.memory().heldBytes, 40);
    assert.deepEqual(h.loads, ['a']);
    second.release();
    second.release();
    assert.equal(unit(h, 'a')?.inFlight, 1);
  });

  test('FIFO: a later admit that would fit does not jump a queued one', async () => {
    const h = harness();
    await h.busy('a', 50);
    const b = track(h.s.admit('b', 60));
    const c = track(h.s.admit('c', 40));
    await flush();
    assert.equal(c.done, false);
    assert.deepEqual(h.queued, [
      ['b', 1],
      ['c', 2],
    ]);
    assert.equal(h.s.memory().heldBytes, 50);
    h.s.crashed('a');
    await flush();
    assert.equal((b.value as Lease | undefined)?.loads, true);
    assert.equal((c.value as Lease | undefined)?.loads, true);
  });

  test('the coldest cold unit is evicted, never an in-flight, in-session, pinned or loading one', async () => {
    const h = harness({ keepAlive: { e: 60_000 } });
    await h.idle('a', 20);
    h.clock.advance(10);
    await h.idle('b', 20);
    await h.busy('c', 20);
    await h.idle('d', 20);
    h.s.pin('d', true);
    await h.idle('e', 20, 'sess-1');
    assert.equal(h.s.memory().heldBytes, 100);

    const f = await h.s.admit('f', 20); // left loading
    assert.deepEqual(h.evictCalls, ['a']);
    assert.deepEqual(h.evicted, ['a:memory']);
    assert.equal(f.loads, true);

    // Only b (20) is cold now; 40 would need a warm one too, so nothing at all is evicted.
    await assert.rejects(h.s.admit('g', 40, { wait: false }), isCode('MODEL_MEMORY_BUSY'));
    assert.deepEqual(h.evictCalls, ['a']);
    await h.s.admit('g', 20);
    assert.deepEqual(h.evictCalls, ['a', 'b']);
    assert.deepEqual(
      h.s.residency().map((u) => u.modelId),
      ['c', 'd', 'e', 'f', 'g'],
    );
    assert.ok(Math.max(...h.heldSeen) <= 100);
  });

  test('a queued load is admitted once a session keep-alive passes', async () => {
    const h = harness({ keepAlive: { a: 60_000 } });
    await h.idle('a', 100, 'sess-1');
    const b = track(h.s.admit('b', 50));
    await flush();
    assert.deepEqual(h.queued, [['b', 1]]);
    h.clock.advance(59_999);
    await flush();
    assert.equal(b.done, false);
    assert.deepEqual(h.evictCalls, []);
    h.clock.advance(1);
    await flush();
    assert.deepEqual(h.evictCalls, ['a']);
    assert.equal((b.value as Lease | undefined)?.loads, true);
    assert.deepEqual(h.waits, [60_000]);
    assert.equal(h.s.memory().heldBytes, 50);
  });

  test('wait:false is refused with a Retry-After of the soonest keep-alive end, rounded up', async () => {
    const h = harness({ keepAlive: { a: 90_500, b: 200_000 } });
    await h.idle('a', 50, 'sess-1');
    await h.idle('b', 50, 'sess-2');
    h.clock.advance(10_000);
    await assert.rejects(h.s.admit('c', 10, { wait: false }), (err: ServiceError) => {
      assert.equal(err.code, 'MODEL_MEMORY_BUSY');
      assert.equal(err.details.retryAfterSeconds, 81);
      assert.equal(err.headers['retry-after'], '81');
      return true;
    });
    assert.equal(h.s.memory().queued, 0);
  });

  test('busy with only in-flight calls holding the room: the default Retry-After', async () => {
    const h = harness();
    await h.busy('a', 100);
    await assert.rejects(h.s.admit('b', 10, { wait: false }), (err: ServiceError) => {
      assert.equal(err.details.retryAfterSeconds, DEFAULT_RETRY_AFTER_SECONDS);
      return true;
    });
  });

  test('a full queue refuses at once', async () => {
    const h = harness({ queueSize: () => 1 });
    await h.busy('a', 100);
    const b = track(h.s.admit('b', 10));
    await assert.rejects(h.s.admit('c', 10), isCode('MODEL_MEMORY_BUSY'));
    await flush();
    assert.equal(b.done, false);
    assert.equal(h.s.memory().queued, 1);
  });

  test('a queued load gives up after waitMs with the busy error', async () => {
    const h = harness({ waitMs: () => 5_000 });
    await h.busy('a', 100);
    const b = track(h.s.admit('b', 10));
    h.clock.advance(4_999);
    await flush();
    assert.equal(b.done, false);
    h.clock.advance(1);
    await flush();
    assert.ok(isCode('MODEL_MEMORY_BUSY')(b.error));
    assert.deepEqual(h.s.memory(), { budgetBytes: 100, heldBytes: 100, queued: 0 });
  });

  test('an aborted signal takes a queued load out at once; one aborted already is never queued', async () => {
    const h = harness();
    const a = await h.busy('a', 100);
    const ctl = new AbortController();
    const b = track(h.s.admit('b', 10, { signal: ctl.signal }));
    assert.equal(h.s.memory().queued, 1);
    ctl.abort();
    await flush();
    assert.equal((b.error as Error | undefined)?.name, 'AbortError');
    assert.equal(h.s.memory().queued, 0);
    a.release();
    assert.equal(unit(h, 'b'), undefined);
    assert.equal(h.s.memory().heldBytes, 100);

    await assert.rejects(h.s.admit('c', 10, { signal: AbortSignal.abort() }), { name: 'AbortError' });
    assert.deepEqual(h.queued, [['b', 1]]);
  });

  test('unpinning a model lets a queued load evict it', async () => {
    const h = harness();
    await h.idle('a', 100);
    h.s.pin('a', true);
    const b = track(h.s.admit('b', 50));
    await flush();
    assert.equal(b.done, false);
    h.s.pin('a', false);
    await flush();
    assert.deepEqual(h.evictCalls, ['a']);
    assert.equal((b.value as Lease | undefined)?.loads, true);
  });

  test('a model larger than the whole budget is a distinct 400, never a wait', async () => {
    const h = harness();
    await assert.rejects(h.s.admit('big', 101), (err: ServiceError) => {
      assert.equal(err.code, 'MODEL_TOO_LARGE');
      assert.equal(err.status, 400);
      assert.deepEqual(err.details, { modelId: 'big', neededBytes: 101, budgetBytes: 100 });
      return true;
    });
    assert.equal(h.s.memory().queued, 0);
    // Refused at once even behind a queue it would otherwise wait in.
    await h.busy('a', 100);
    const waiting = track(h.s.admit('b', 10));
    await assert.rejects(h.s.admit('big', 101), isCode('MODEL_TOO_LARGE'));
    assert.equal(waiting.done, false);
    assert.equal(h.s.memory().queued, 1);
  });

  test('a raised budget (recheck) admits a queued load; a lowered one fails a head that can never fit', async () => {
    const h = harness();
    await h.busy('a', 100);
    const b = track(h.s.admit('b', 60));
    const c = track(h.s.admit('c', 30));
    h.settings.budget = 160;
    h.s.recheck();
    await flush();
    assert.equal((b.value as Lease | undefined)?.loads, true);
    assert.equal(c.done, false);
    h.settings.budget = 20;
    h.s.recheck();
    await flush();
    assert.ok(isCode('MODEL_TOO_LARGE')(c.error));
  });
});

describe('memory scheduler: races', () => {
  test('two admits racing for the last memory: one gets it, the other waits, held stays within budget', async () => {
    const h = harness();
    await h.busy('a', 60);
    const x = h.s.admit('x', 40);
    const y = track(h.s.admit('y', 40));
    const z = h.s.admit('z', 40, { wait: false });
    const xLease = await x;
    await assert.rejects(z, isCode('MODEL_MEMORY_BUSY'));
    assert.equal(y.done, false);
    assert.equal(h.s.memory().heldBytes, 100);
    xLease.loaded();
    xLease.release();
    await flush();
    assert.deepEqual(h.evictCalls, ['x']);
    assert.equal((y.value as Lease | undefined)?.loads, true);
    assert.equal(h.s.memory().heldBytes, 100);
    assert.ok(Math.max(...h.heldSeen) <= 100);
  });

  test('a unit crashing during a call frees its bytes, wakes the queue, and the late release is harmless', async () => {
    const h = harness();
    const a = await h.busy('a', 100);
    const b = track(h.s.admit('b', 70));
    h.s.crashed('a');
    await flush();
    assert.equal((b.value as Lease | undefined)?.loads, true);
    assert.equal(h.s.memory().heldBytes, 70);
    a.release();
    a.release();
    assert.equal(h.s.memory().heldBytes, 70);
    assert.deepEqual(
      h.s.residency().map((u) => [u.modelId, u.inFlight]),
      [['b', 1]],
    );
    const again = await h.s.admit('a', 30);
    assert.equal(again.loads, true);
  });

  test('an evict() that rejects keeps the unit and its bytes, and is retried only after EVICT_RETRY_MS', async () => {
    let failures = 1;
    const calls: string[] = [];
    const h = harness({
      evict: async (id) => {
        calls.push(id);
        if (failures-- > 0) throw new Error('unload failed');
      },
    });
    await h.idle('a', 100);
    const b = track(h.s.admit('b', 50));
    await flush();
    assert.deepEqual(calls, ['a']);
    assert.equal(unit(h, 'a')?.state, 'resident');
    assert.equal(h.s.memory().heldBytes, 100);
    assert.deepEqual(h.evicted, []);
    assert.equal(b.done, false);
    await assert.rejects(h.s.admit('c', 10, { wait: false }), isCode('MODEL_MEMORY_BUSY'));
    h.clock.advance(EVICT_RETRY_MS);
    await flush();
    assert.deepEqual(calls, ['a', 'a']);
    assert.equal((b.value as Lease | undefined)?.loads, true);
    assert.equal(h.s.memory().heldBytes, 50);
  });

  test('an admit for a unit being evicted waits for the eviction, then loads it afresh', async () => {
    let finish!: () => void;
    const h = harness({ evict: (id) => new Promise<void>((resolve) => (finish = () => resolve(void id))) });
    await h.idle('a', 60);
    await h.busy('b', 40);
    const c = track(h.s.admit('c', 60));
    await flush();
    assert.equal(unit(h, 'a')?.state, 'evicting');
    const a = track(h.s.admit('a', 60));
    await flush();
    assert.equal(a.done, false);
    assert.equal(unit(h, 'a')?.inFlight, 0);
    finish();
    await flush();
    const cLease = c.value as Lease;
    assert.equal(cLease.loads, true);
    assert.equal(a.done, false);
    assert.equal(h.s.memory().heldBytes, 100);
    cLease.loaded();
    cLease.release();
    await flush();
    finish();
    await flush();
    assert.equal((a.value as Lease | undefined)?.loads, true);
    assert.ok(Math.max(...h.heldSeen) <= 100);
  });

  test('its evicting admit cancelled, a new admit for the evicted unit waits, never joins it', async () => {
    let finish!: () => void;
    const h = harness({ evict: () => new Promise<void>((resolve) => (finish = resolve)) });
    await h.idle('a', 60);
    const ctl = new AbortController();
    const c = track(h.s.admit('c', 60, { signal: ctl.signal }));
    await flush();
    assert.equal(unit(h, 'a')?.state, 'evicting');
    ctl.abort();
    const a = track(h.s.admit('a', 60));
    await flush();
    assert.equal((c.error as Error | undefined)?.name, 'AbortError');
    assert.equal(a.done, false);
    finish();
    await flush();
    assert.equal((a.value as Lease | undefined)?.loads, true);
    assert.deepEqual(h.s.memory(), { budgetBytes: 100, heldBytes: 60, queued: 0 });
  });

  test('wait:false whose eviction rejects is refused, not left waiting', async () => {
    const h = harness({ evict: () => Promise.reject(new Error('unload failed')) });
    await h.idle('a', 100);
    await assert.rejects(h.s.admit('b', 50, { wait: false }), isCode('MODEL_MEMORY_BUSY'));
    assert.deepEqual(h.s.memory(), { budgetBytes: 100, heldBytes: 100, queued: 0 });
  });

  test('a queued head that gives up lets a smaller one behind it in', async () => {
    const h = harness();
    await h.busy('a', 50);
    const ctl = new AbortController();
    track(h.s.admit('b', 60, { signal: ctl.signal }));
    const c = track(h.s.admit('c', 40));
    await flush();
    assert.equal(c.done, false);
    ctl.abort();
    await flush();
    assert.equal((c.value as Lease | undefined)?.loads, true);
    assert.equal(h.s.memory().heldBytes, 90);
  });

  test('release() by the loader before loaded() frees the room, as failed() does', async () => {
    const h = harness();
    const a = await h.s.admit('a', 50);
    a.release();
    assert.equal(unit(h, 'a'), undefined);
    const b = await h.s.admit('b', 50);
    b.failed();
    assert.deepEqual(h.s.memory(), { budgetBytes: 100, heldBytes: 0, queued: 0 });
  });
});

describe('memory scheduler: residency view', () => {
  test('each unit says why it is warm and when it goes cold', async () => {
    const h = harness({ keepAlive: { s: 30_000, f: -1 } });
    await h.s.admit('l', 10);
    await h.idle('p', 10);
    h.s.pin('p', true);
    await h.idle('s', 10, 'sess-1');
    const sAt = h.clock.now();
    await h.idle('f', 10, 'sess-2');
    await h.idle('c', 10);
    const view = Object.fromEntries(h.s.residency().map((u) => [u.modelId, u]));
    assert.deepEqual(view.l?.warm, ['in_flight', 'loading']);
    assert.deepEqual(view.p?.warm, ['pinned']);
    assert.deepEqual(view.s?.warm, ['session']);
    assert.equal(view.s?.coldAt, sAt + 30_000);
    assert.deepEqual(view.s?.sessions, [{ session: 'sess-1', lastUseAt: sAt }]);
    assert.deepEqual(view.f?.warm, ['session']);
    assert.equal(view.f?.coldAt, null);
    assert.deepEqual(view.c?.warm, []);
    h.clock.advance(30_000);
    assert.deepEqual(unit(h, 's')?.warm, []);
  });

  test(`a unit remembers only its latest ${MAX_SESSIONS} sessions`, async () => {
    const h = harness();
    for (let i = 0; i < MAX_SESSIONS + 6; i++) {
      const lease = await h.s.admit('a', 10, { session: `s${i}` });
      lease.loaded();
      lease.release();
      h.clock.advance(1);
    }
    const sessions = unit(h, 'a')?.sessions.map((x) => x.session) ?? [];
    assert.equal(sessions.length, MAX_SESSIONS);
    assert.equal(sessions[0], `s${MAX_SESSIONS + 5}`);
    assert.equal(sessions.includes('s5'), false);
    assert.equal(sessions.includes('s6'), true);
  });
});
