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

/**
 * A clock for one body, counting from `startedAt` (performance.now() at its head). `tooSlow` runs at most
 * once. One timer, armed for the moment the bytes received so far stop covering the rate (so a body that
 * keeps up wakes it only a few times), and only once a body did not come whole in its first read: most do,
 * and cost an object here, not a timer. A body that never starts is the idle timeout's.
 */
export class BodyClock {
  private received = 0;
  /** Counted milliseconds before `since`; `since` is null while the edge does not read. */
  private counted = 0;
  private since: number | null;
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private over = false;

  constructor(
    private readonly pace: BodyPace,
    startedAt: number,
    private readonly tooSlow: () => void,
  ) {
    this.since = startedAt;
  }

  /** Body bytes that arrived; `last` when the body is whole. */
  add(bytes: number, last: boolean): void {
    this.received += bytes;
    if (last) this.stop();
    else if (!this.started && !this.over) {
      this.started = true;
      if (this.since !== null) this.arm();
    }
  }

  pause(): void {
    if (this.since === null) return;
    this.counted += performance.now() - this.since;
    this.since = null;
    this.disarm();
  }

  resume(): void {
    if (this.over || this.since !== null) return;
    this.since = performance.now();
    if (this.started) this.arm();
  }

  /** The body is whole, abandoned or answered: the clock stops for good. */
  stop(): void {
    this.over = true;
    this.disarm();
  }

  private elapsed(): number {
    return this.counted + (this.since === null ? 0 : performance.now() - this.since);
  }

  private due(): number {
    return Math.max(this.pace.graceMs, (this.received * 1000) / this.pace.minBytesPerSecond);
  }

  private disarm(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(): void {
    this.disarm();
    this.timer = setTimeout(() => this.check(), Math.max(0, this.due() - this.elapsed()));
    this.timer.unref();
  }

  private check(): void {
    this.timer = null;
    if (this.over || this.since === null) return;
    if (this.elapsed() < this.due()) return this.arm();
    this.over = true;
    this.tooSlow();
  }
}
