import type { Clock } from '../../../workers/gauge/scheduler.ts';

// A clock the test moves: timers fire in due order as `advance` passes them, nothing waits on real time.
export function fakeClock(start = Date.UTC(2026, 5, 1, 12)): Clock & { advance(ms: number): void; pending(): number } {
  let now = start;
  let seq = 0;
  const timers = new Map<number, { at: number; run: () => void }>();
  return {
    now: () => now,
    setTimer(run, ms) {
      const id = ++seq;
      timers.set(id, { at: now + Math.max(0, ms), run });
      return id;
    },
    clearTimer: (handle) => void timers.delete(handle as number),
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const next = [...timers.entries()]
          .filter(([, t]) => t.at <= until)
          .sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
        if (!next) break;
        timers.delete(next[0]);
        now = next[1].at;
        next[1].run();
      }
      now = until;
    },
    pending: () => timers.size,
  };
}
