// How slowly a request body may arrive (docs/api.md, HTTP at the edge). The idle timeout only bounds the gap
// between bytes, so a client sending a byte a second would hold its connection, its body budget and its
// buffer for as long as it likes. After a grace period the body must have averaged a minimum rate since its
// head; time during which the edge itself stopped reading (a consumer behind) is not counted.

export interface BodyPace {
  graceMs: number;
  minBytesPerSecond: number;
}

/** 16 KiB/s is 128 kbit/s: any real link, including a 64 MiB upload, which may then take about 68 minutes. */
export const BODY_PACE: BodyPace = { graceMs: 10_000, minBytesPerSecond: 16 * 1024 };

export interface BodyClock {
  /** Body bytes that arrived; `last` when the body is whole. */
  add(bytes: number, last: boolean): void;
  pause(): void;
  resume(): void;
  /** The body is whole, abandoned or answered: the clock stops for good. */
  stop(): void;
}

/**
 * A clock for one body, counting from `startedAt` (performance.now() at its head). `tooSlow` runs at most
 * once. One timer, armed for the moment the bytes received so far stop covering the rate (so a body that
 * keeps up wakes it only a few times), and only once a body did not come whole in its first read: most do.
 * A body that never starts is the idle timeout's.
 */
export function bodyClock(pace: BodyPace, startedAt: number, tooSlow: () => void): BodyClock {
  let received = 0;
  let counted = 0;
  let since: number | null = startedAt;
  let timer: NodeJS.Timeout | null = null;
  let started = false;
  let over = false;
  const elapsed = () => counted + (since === null ? 0 : performance.now() - since);
  const due = () => Math.max(pace.graceMs, (received * 1000) / pace.minBytesPerSecond);
  const disarm = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  const arm = () => {
    disarm();
    timer = setTimeout(check, Math.max(0, due() - elapsed()));
    timer.unref();
  };
  function check(): void {
    timer = null;
    if (over || since === null) return;
    if (elapsed() < due()) return arm();
    over = true;
    tooSlow();
  }
  const stop = () => {
    over = true;
    disarm();
  };
  return {
    add(bytes, last) {
      received += bytes;
      if (last) stop();
      else if (!started && !over) {
        started = true;
        if (since !== null) arm();
      }
    },
    pause() {
      if (since === null) return;
      counted += performance.now() - since;
      since = null;
      disarm();
    },
    resume() {
      if (over || since !== null) return;
      since = performance.now();
      if (started) arm();
    },
    stop,
  };
}
