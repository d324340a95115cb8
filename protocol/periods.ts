import type { BudgetPeriod } from './gauge-money.ts';
import { localDayOf } from './local-day.ts';

// Budget periods in the machine's local time zone, built from calendar fields (never by adding 24-hour steps),
// so a DST change makes a day 23 or 25 hours long instead of moving its bounds off midnight. Weeks are ISO
// weeks: Monday 00:00 to the next Monday 00:00. Every bound is a local midnight, and usage is kept per local
// day, so a period is exactly the days [firstDay, lastDay].

export interface PeriodBounds {
  /** Epoch milliseconds, inclusive. */
  start: number;
  /** Epoch milliseconds, exclusive: the next period's start. */
  end: number;
  /** Local days (YYYY-MM-DD) of the first and last day in the period, both inclusive. */
  firstDay: string;
  lastDay: string;
}

/** The period of kind `period` that contains the instant `now`. */
export function periodBounds(period: BudgetPeriod, now: number): PeriodBounds {
  const d = new Date(now);
  const y = d.getFullYear();
  const m = d.getMonth();
  const day = d.getDate();
  let start: Date;
  let end: Date;
  if (period === 'day') {
    start = new Date(y, m, day);
    end = new Date(y, m, day + 1);
  } else if (period === 'week') {
    // getDay() is 0 for Sunday; ISO weeks start on Monday.
    const back = (d.getDay() + 6) % 7;
    start = new Date(y, m, day - back);
    end = new Date(y, m, day - back + 7);
  } else {
    start = new Date(y, m, 1);
    end = new Date(y, m + 1, 1);
  }
  return {
    start: start.getTime(),
    end: end.getTime(),
    firstDay: localDayOf(start.getTime()),
    lastDay: localDayOf(end.getTime() - 1),
  };
}
