import type { LimitWindow } from './http/limits.ts';

/** The windows that are calendar periods; a `gauge` window is the provider's own (its reading says when it resets). */
export type CalendarWindow = Exclude<LimitWindow, 'gauge'>;

// The calendar windows of enforced limits. Minute and hour are UTC (they agree with every clock); day, week and
// month follow the service's local time, as usage's days do, so "today's $5" means the day the user sees. A week
// starts on Monday. Both functions are pure: the ledger and the control plane compute the same window for the
// same instant on any thread.

const MINUTE = 60_000;
const HOUR = 3_600_000;

/** The start (ms since the epoch) of the window of `window` kind that holds `now`. */
export function windowStartOf(window: CalendarWindow, now: number): number {
  switch (window) {
    case 'minute':
      return now - (now % MINUTE);
    case 'hour':
      return now - (now % HOUR);
    case 'day': {
      const d = new Date(now);
      return new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
    }
    case 'week': {
      const d = new Date(now);
      const sinceMonday = (d.getDay() + 6) % 7;
      return new Date(d.getFullYear(), d.getMonth(), d.getDate() - sinceMonday).getTime();
    }
    case 'month': {
      const d = new Date(now);
      return new Date(d.getFullYear(), d.getMonth(), 1).getTime();
    }
  }
}

/** When the window that started at `start` ends (the next one's start). Local days may be 23 or 25 hours long. */
export function windowEndOf(window: CalendarWindow, start: number): number {
  switch (window) {
    case 'minute':
      return start + MINUTE;
    case 'hour':
      return start + HOUR;
    case 'day': {
      const d = new Date(start);
      return new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1).getTime();
    }
    case 'week': {
      const d = new Date(start);
      return new Date(d.getFullYear(), d.getMonth(), d.getDate() + 7).getTime();
    }
    case 'month': {
      const d = new Date(start);
      return new Date(d.getFullYear(), d.getMonth() + 1, 1).getTime();
    }
  }
}

/** A session a `new_sessions` Gauge gate admitted no call of for this long is over: no longer under way. */
export const UNDER_WAY_MS = 24 * 3_600_000;

/** Whether a session a gate marked at `markedAt` (the hour of its last admitted call) is still under way. */
export const underWayAt = (markedAt: number, now: number): boolean => markedAt > now - UNDER_WAY_MS;
