import type { GaugeCredits, GaugeWindow } from '../../../../protocol/gauge.ts';

// Codex writes the rate-limit headers of each answer into its token_count events:
// `rate_limits.{primary,secondary}.{used_percent, window_minutes, resets_at (unix s) | resets_in_seconds}` and
// sometimes `credits{has_credits, unlimited, balance}`. The newest event across all files is this account's
// quota, read with no network call.

/** A window as kept in state: used percent, window minutes, reset time (ms) */
export interface LimitWindow {
  p: number;
  m: number | null;
  r: number | null;
}

export interface LimitSnapshot {
  /** The event's own timestamp (ms): the newest event wins, whichever file it is in. */
  at: number;
  primary: LimitWindow | null;
  secondary: LimitWindow | null;
  credits: { balance: number | null; unlimited: boolean } | null;
}

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function windowOf(raw: unknown, at: number): LimitWindow | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const w = raw as Record<string, unknown>;
  if (!finite(w['used_percent']) || w['used_percent'] < 0 || w['used_percent'] > 1000) return null;
  const minutes =
    finite(w['window_minutes']) && w['window_minutes'] > 0 && w['window_minutes'] <= 527_040
      ? Math.round(w['window_minutes'])
      : null;
  let resets: number | null = null;
  const resetsAt = w['resets_at'];
  const resetsIn = w['resets_in_seconds'];
  // resets_at is unix seconds; a value that large already is milliseconds.
  if (finite(resetsAt) && resetsAt > 0) resets = resetsAt > 1e12 ? resetsAt : resetsAt * 1000;
  else if (finite(resetsIn) && resetsIn >= 0 && resetsIn < 1e9) resets = at + resetsIn * 1000;
  return {
    p: Math.min(100, w['used_percent']),
    m: minutes,
    r: resets !== null && resets < 8.64e15 ? Math.round(resets) : null,
  };
}

export function snapshotOf(raw: unknown, at: number): LimitSnapshot | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const limits = raw as Record<string, unknown>;
  const primary = windowOf(limits['primary'], at);
  const secondary = windowOf(limits['secondary'], at);
  const c = limits['credits'];
  let credits: LimitSnapshot['credits'] = null;
  if (typeof c === 'object' && c !== null) {
    const { balance, unlimited } = c as Record<string, unknown>;
    const amount =
      typeof balance === 'string' && balance.length <= 32 ? Number(balance) : finite(balance) ? balance : Number.NaN;
    credits = { balance: Number.isFinite(amount) ? amount : null, unlimited: unlimited === true };
  }
  if (primary === null && secondary === null && credits === null) return null;
  return { at, primary, secondary, credits };
}

export function restoreSnapshot(raw: unknown): LimitSnapshot | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const s = raw as Record<string, unknown>;
  const win = (w: unknown): LimitWindow | null => {
    if (typeof w !== 'object' || w === null) return null;
    const { p, m, r } = w as Record<string, unknown>;
    if (!finite(p)) return null;
    return { p, m: finite(m) ? m : null, r: finite(r) ? r : null };
  };
  if (!finite(s['at'])) return null;
  const c = s['credits'] as Record<string, unknown> | null | undefined;
  const credits =
    typeof c === 'object' && c !== null
      ? { balance: finite(c['balance']) ? c['balance'] : null, unlimited: c['unlimited'] === true }
      : null;
  return { at: s['at'], primary: win(s['primary']), secondary: win(s['secondary']), credits };
}

/** "5h" for 300 minutes, "7d" for 10080, else the largest whole unit. */
export function periodOf(minutes: number | null): string | null {
  if (minutes === null) return null;
  if (minutes % 1440 === 0) return `${minutes / 1440}d`;
  if (minutes % 60 === 0) return `${minutes / 60}h`;
  return `${minutes}m`;
}

/**
 * Utilization windows in percent (limit 100). Once a window's reset time has passed, the logged figure is
 * about a window that is over and nothing says what the new one holds: used and remaining become null.
 */
export function limitWindows(snapshot: LimitSnapshot, now: Date): GaugeWindow[] {
  const out: GaugeWindow[] = [];
  for (const [id, w] of [
    ['primary', snapshot.primary],
    ['secondary', snapshot.secondary],
  ] as const) {
    if (w === null) continue;
    const over = w.r !== null && w.r <= now.getTime();
    out.push({
      id,
      kind: 'utilization',
      period: periodOf(w.m),
      used: over ? null : w.p,
      limit: 100,
      remaining: over ? null : Math.max(0, 100 - w.p),
      utilization: over ? null : w.p / 100,
      resetsAt: over || w.r === null ? null : new Date(w.r).toISOString(),
    });
  }
  return out;
}

export function creditsOf(snapshot: LimitSnapshot): GaugeCredits | null {
  if (snapshot.credits === null || snapshot.credits.unlimited) return null;
  return { remaining: snapshot.credits.balance, total: null, currency: null };
}
