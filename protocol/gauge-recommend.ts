import type { GaugeConfidence, GaugeReading, GaugeWindow } from './gauge.ts';
import { tightest, type CapacityStatus } from './gauge-capacity.ts';

// GET /v1/gauge/recommendations: whether an account lasts `duration` at its recent burn rate, from cached
// readings and hourly history only (no collector runs, nothing is switched). The account's tightest window
// decides; its burn rate is the drop in what is left between the oldest snapshot of the same window period in
// the last LOOKBACK_MS and the latest reading, per hour; the projection runs to the horizon or to the window's
// reset, whichever is first, and a reset inside the horizon must refill enough for the rest of it.

export const LOOKBACK_MS = 24 * 60 * 60_000;
const HOUR_MS = 60 * 60_000;

export type Verdict = 'lasts' | 'runs_out' | 'unknown';

export interface Estimate {
  verdict: Verdict;
  confidence: GaugeConfidence;
  reason: string;
  window: {
    id: string;
    kind: string;
    period: string | null;
    remaining: number | null;
    limit: number | null;
    resetsAt: string | null;
  } | null;
  /** Units of the window (requests, tokens, USD, or share for utilization windows) per hour; null when unknown. */
  burnRatePerHour: number | null;
  /** What is left at the horizon (or at the reset, when it comes first) at that rate. */
  projectedRemaining: number | null;
  runsOutAt: string | null;
}

interface Point {
  at: number;
  left: number;
}

/** What is left of one window in a reading, in the window's own unit (a share for utilization-only windows). */
function leftOf(w: GaugeWindow): number | null {
  if (w.remaining !== null) return w.remaining;
  if (w.limit !== null && w.used !== null) return Math.max(0, w.limit - w.used);
  if (w.utilization !== null) return 1 - w.utilization;
  return null;
}

function windowLeft(
  r: GaugeReading,
  id: string,
): { left: number; window: GaugeWindow | null; limit: number | null; resetsAt: string | null } | null {
  if (id === 'credits')
    return r.credits?.remaining == null
      ? null
      : { left: r.credits.remaining, window: null, limit: r.credits.total, resetsAt: null };
  const w = r.windows.find((x) => x.id === id);
  const left = w ? leftOf(w) : null;
  if (!w || left === null) return null;
  return {
    left,
    window: w,
    limit: w.limit ?? (w.remaining === null && w.used === null ? 1 : null),
    resetsAt: w.resetsAt,
  };
}

const round = (x: number) => Math.round(x * 1e6) / 1e6;

export function estimate(
  reading: GaugeReading,
  history: readonly GaugeReading[],
  now: number,
  durationMs: number,
): Estimate {
  const tight = tightest(reading, now);
  if (tight === null) {
    return {
      verdict: 'unknown',
      confidence: 'low',
      reason: 'no window with a limit counts now (none reported, all reset, or the reading is over a day old)',
      window: null,
      burnRatePerHour: null,
      projectedRemaining: null,
      runsOutAt: null,
    };
  }
  const current = windowLeft(reading, tight.windowId)!;
  const w = current.window;
  const window = {
    id: tight.windowId,
    kind: w?.kind ?? 'credits',
    period: w?.period ?? null,
    remaining: current.left,
    limit: current.limit,
    resetsAt: current.resetsAt,
  };
  const readAt = Date.parse(reading.collectedAt);
  // Snapshots of the same window period: a different reset time is an earlier period, refilled since.
  const points: Point[] = history
    .filter((h) => Date.parse(h.collectedAt) < readAt && now - Date.parse(h.collectedAt) <= LOOKBACK_MS)
    .flatMap((h) => {
      const x = windowLeft(h, tight.windowId);
      return x !== null && x.resetsAt === current.resetsAt ? [{ at: Date.parse(h.collectedAt), left: x.left }] : [];
    })
    .sort((a, b) => a.at - b.at);
  points.push({ at: readAt, left: current.left });
  const ageMs = now - readAt;
  const base = { window, runsOutAt: null as string | null };

  if (current.left <= 0) {
    return {
      ...base,
      verdict: 'runs_out',
      confidence: ageMs <= HOUR_MS ? 'high' : 'medium',
      reason: `window \`${tight.windowId}\` has nothing left${current.resetsAt ? ` until ${current.resetsAt}` : ''}`,
      burnRatePerHour: null,
      projectedRemaining: 0,
      runsOutAt: new Date(readAt).toISOString(),
    };
  }
  if (points.length < 2) {
    return {
      ...base,
      verdict: 'unknown',
      confidence: 'low',
      reason: 'one reading of this window period: no burn rate yet',
      burnRatePerHour: null,
      projectedRemaining: null,
    };
  }
  const first = points[0]!;
  const spanMs = readAt - first.at;
  const rate = Math.max(0, (first.left - current.left) / spanMs);
  const confidence: GaugeConfidence =
    points.length >= 3 && spanMs >= 2 * HOUR_MS && ageMs <= HOUR_MS && reading.confidence === 'high'
      ? 'high'
      : ageMs <= 6 * HOUR_MS
        ? 'medium'
        : 'low';
  const why =
    `${points.length} readings over ${(spanMs / HOUR_MS).toFixed(1)} h, latest ` +
    `${Math.round(ageMs / 60_000)} min old, ${reading.confidence} confidence source`;
  const leftNow = Math.max(0, current.left - rate * Math.max(0, ageMs));
  const horizon = now + durationMs;
  const resetAt = current.resetsAt === null ? null : Date.parse(current.resetsAt);
  const until = resetAt !== null && resetAt < horizon ? resetAt : horizon;
  const projected = leftNow - rate * (until - now);
  const runsOutAt = rate > 0 && projected <= 0 ? new Date(now + leftNow / rate).toISOString() : null;
  // After a reset inside the horizon the window starts full: it must hold the rest of the horizon's use.
  const refillShort = until !== horizon && current.limit !== null && rate * (horizon - until) > current.limit;
  const lasts = projected > 0 && !refillShort;
  const reason =
    rate === 0
      ? `nothing used from \`${tight.windowId}\` over ${why}`
      : lasts
        ? `at ${round(rate * HOUR_MS)} per hour \`${tight.windowId}\` lasts (${why})`
        : `at ${round(rate * HOUR_MS)} per hour \`${tight.windowId}\` runs ` +
          `out${refillShort ? ' again after its reset' : ''} (${why})`;
  return {
    ...base,
    verdict: lasts ? 'lasts' : 'runs_out',
    confidence,
    reason,
    burnRatePerHour: round(rate * HOUR_MS),
    projectedRemaining: round(projected),
    runsOutAt,
  };
}

export interface Candidate {
  accountId: string;
  providerId: string;
  headroom: number | null;
  resetsAt: string | null;
  status: CapacityStatus;
}

/** Most headroom first; accounts with no counting window after those with one. */
export function rankCandidates(list: Candidate[]): Candidate[] {
  return [...list].sort((a, b) => {
    if (a.headroom !== b.headroom) {
      if (a.headroom === null) return 1;
      if (b.headroom === null) return -1;
      return b.headroom - a.headroom;
    }
    return a.accountId < b.accountId ? -1 : 1;
  });
}

/** The part of a model name after its last `/`: `openai/gpt-4o`, `pa/gpt-4o` and `gpt-4o` are one model. */
export const modelBase = (name: string) => name.slice(name.lastIndexOf('/') + 1);
