import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keepAlive, type Timers } from '../../../workers/runtime/keep-alive.ts';

// The keep-alive clock on a hand-run clock: no test waits for a real timer.

function manualTimers() {
  let now = 1_000_000;
  const pending = new Map<number, { at: number; run(): void }>();
  let next = 1;
  const timers: Timers = {
    now: () => now,
    set(run, ms) {
      const id = next++;
      pending.set(id, { at: now + ms, run });
      return id;
    },
    clear: (id) => void pending.delete(id as number),
  };
  return {
    timers,
    pending: () => pending.size,
    advance(ms: number) {
      now += ms;
      for (const [id, t] of [...pending]) {
        if (t.at > now) continue;
        pending.delete(id);
        t.run();
      }
    },
  };
}

describe('keep-alive', () => {
  it('starts when the last call ends, reports when it ends, and unloads once', () => {
    const clock = manualTimers();
    let expired = 0;
    const k = keepAlive(() => expired++, clock.timers);
    const a = k.use(300);
    const b = k.use(300);
    a();
    assert.equal(k.expiresAt(), null, 'a call still holds the model');
    b();
    b();
    assert.equal(k.expiresAt(), 1_000_000 + 300_000);
    clock.advance(299_999);
    assert.equal(expired, 0);
    clock.advance(1);
    assert.equal(expired, 1);
    assert.equal(k.expiresAt(), null);
    k.idle(300);
    clock.advance(1_000_000);
    assert.equal(expired, 1, 'an expired model is not unloaded twice');
  });

  it("a call during the countdown stops it; its end starts it again with that call's setting", () => {
    const clock = manualTimers();
    let expired = 0;
    const k = keepAlive(() => expired++, clock.timers);
    k.idle(60);
    clock.advance(59_000);
    const end = k.use(120);
    assert.equal(clock.pending(), 0);
    clock.advance(10_000);
    end();
    assert.equal(k.expiresAt(), 1_000_000 + 69_000 + 120_000);
    clock.advance(119_999);
    assert.equal(expired, 0);
    clock.advance(1);
    assert.equal(expired, 1);
  });

  it('0 unloads as soon as the last call ends, -1 never', () => {
    const clock = manualTimers();
    let expired = 0;
    const now = keepAlive(() => expired++, clock.timers);
    const end = now.use(0);
    assert.equal(expired, 0);
    end();
    assert.equal(expired, 1);
    const never = keepAlive(() => expired++, clock.timers);
    never.use(-1)();
    never.idle(-1);
    assert.equal(never.expiresAt(), null);
    assert.equal(clock.pending(), 0);
    assert.equal(expired, 1);
  });

  it('cancel stops the clock for good (an unloaded or failed model)', () => {
    const clock = manualTimers();
    let expired = 0;
    const k = keepAlive(() => expired++, clock.timers);
    k.idle(10);
    k.cancel();
    assert.equal(clock.pending(), 0);
    k.use(0)();
    assert.equal(expired, 0);
  });
});
