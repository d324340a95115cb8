import type { GaugeSourceState } from '../../protocol/gauge-messages.ts';

// The background scheduler: one timer, armed for the earliest due source. A source runs again after the base
// interval, or the shorter active interval while gateway traffic flows; after a failure it waits twice as long
// per consecutive failure (capped); a provider's Retry-After is a floor under all of that. Time comes from an
// injectable clock, so tests drive it without waiting.

export interface Clock {
  now(): number;
  setTimer(run: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(run, ms) {
    const t = setTimeout(run, ms);
    t.unref();
    return t;
  },
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface ScheduleTimes {
  baseMs: number;
  activeMs: number;
  maxBackoffMs: number;
  /** How long after the last gateway call traffic counts as flowing. */
  activeWindowMs: number;
  /** Delay before a source that never ran (or was just enabled) runs. */
  firstRunMs: number;
}

export const DEFAULT_TIMES: ScheduleTimes = {
  baseMs: 15 * 60_000,
  activeMs: 2 * 60_000,
  maxBackoffMs: 60 * 60_000,
  activeWindowMs: 10 * 60_000,
  firstRunMs: 5_000,
};

/** When a source should run next, given how its last run went. */
export function planNext(
  state: Pick<GaugeSourceState, 'consecutiveFailures' | 'retryAfterMs'>,
  finishedAt: number,
  active: boolean,
  t: ScheduleTimes,
): number {
  const interval = active ? t.activeMs : t.baseMs;
  const failures = state.consecutiveFailures;
  const wait = failures > 0 ? Math.min(t.maxBackoffMs, interval * 2 ** Math.min(failures - 1, 30)) : interval;
  return finishedAt + Math.max(wait, state.retryAfterMs ?? 0);
}

export interface SchedulerDeps {
  clock: Clock;
  times: ScheduleTimes;
  /** The IDs of enabled sources the scheduler may run (not live headers: nothing to poll). */
  due(): string[];
  state(sourceId: string): GaugeSourceState | undefined;
  /** Runs one source (joining a run already under way); resolves when its state is stored. */
  collect(sourceId: string): Promise<unknown>;
}

export interface Scheduler {
  setEnabled(enabled: boolean): void;
  /** Gateway traffic happened: sources due later than the active interval are pulled in. */
  traffic(): void;
  isActive(): boolean;
  /** Sources changed: re-arm. */
  rearm(): void;
  /** The time each scheduled source is due next (diagnostics). */
  nextRunAt(sourceId: string): number | null;
  close(): void;
}

export function createScheduler(deps: SchedulerDeps): Scheduler {
  const { clock, times } = deps;
  let enabled = false;
  let closed = false;
  let timer: unknown = null;
  let lastTrafficAt = -Infinity;
  /** Sources that have not run since they became schedulable: when they first run. */
  const firstRuns = new Map<string, number>();
  const running = new Set<string>();

  const isActive = () => clock.now() - lastTrafficAt <= times.activeWindowMs;

  function dueAt(id: string): number {
    const s = deps.state(id);
    if (s === undefined || s.lastRunAt === null) {
      let at = firstRuns.get(id);
      if (at === undefined) firstRuns.set(id, (at = clock.now() + times.firstRunMs));
      return at;
    }
    const planned = s.nextRunAt ?? planNext(s, s.lastRunAt, false, times);
    // Traffic shortens a healthy source's wait to the active interval; a failing one keeps its backoff.
    if (isActive() && s.consecutiveFailures === 0)
      return Math.min(planned, Math.max(s.lastRunAt + times.activeMs, s.lastRunAt + (s.retryAfterMs ?? 0)));
    return planned;
  }

  function rearm(): void {
    if (timer !== null) clock.clearTimer(timer);
    timer = null;
    if (!enabled || closed) return;
    const ids = deps.due().filter((id) => !running.has(id));
    for (const id of firstRuns.keys()) if (!ids.includes(id) && !running.has(id)) firstRuns.delete(id);
    if (ids.length === 0) return;
    const next = Math.min(...ids.map(dueAt));
    timer = clock.setTimer(tick, Math.max(0, next - clock.now()));
  }

  function tick(): void {
    timer = null;
    if (!enabled || closed) return;
    const now = clock.now();
    for (const id of deps.due()) {
      if (running.has(id) || dueAt(id) > now) continue;
      running.add(id);
      firstRuns.delete(id);
      void deps
        .collect(id)
        .catch(() => undefined)
        .finally(() => {
          running.delete(id);
          rearm();
        });
    }
    rearm();
  }

  return {
    setEnabled(next) {
      enabled = next;
      if (!next) firstRuns.clear();
      rearm();
    },
    traffic() {
      const wasActive = isActive();
      lastTrafficAt = clock.now();
      if (!wasActive) rearm();
    },
    isActive,
    rearm,
    nextRunAt(id) {
      if (!enabled || !deps.due().includes(id)) return null;
      return dueAt(id);
    },
    close() {
      closed = true;
      if (timer !== null) clock.clearTimer(timer);
      timer = null;
    },
  };
}
