// Usage is bucketed by the machine's local calendar day (YYYY-MM-DD). Day arithmetic works on the
// calendar, not on 24-hour steps, so a DST change never skips or repeats a day.

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** The local day containing `ms` (milliseconds since the epoch). */
export function localDayOf(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getFullYear(), 4)}-${pad(d.getMonth() + 1, 2)}-${pad(d.getDate(), 2)}`;
}

/** Epoch milliseconds of local midnight starting the day after the one containing `ms`. */
export function nextLocalMidnight(ms: number): number {
  const d = new Date(ms);
  return new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1).getTime();
}

function utcOf(day: string): number {
  // setUTCFullYear, unlike Date.UTC, does not read years 0..99 as 1900..1999.
  const d = new Date(0);
  d.setUTCFullYear(Number(day.slice(0, 4)), Number(day.slice(5, 7)) - 1, Number(day.slice(8, 10)));
  return d.getTime();
}

/** `day` moved by `n` calendar days (negative goes back). */
export function addDays(day: string, n: number): string {
  const d = new Date(utcOf(day) + n * 86_400_000);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}`;
}

/** Calendar days from `from` to `to` (0 when equal, negative when `to` is earlier). */
export function daysBetween(from: string, to: string): number {
  return Math.round((utcOf(to) - utcOf(from)) / 86_400_000);
}
