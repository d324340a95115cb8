import type { GaugeReading, GaugeReadingSource } from './gauge.ts';

// How much a Gauge reading leaves (control/gauge/capacity-signal.ts builds the signal from it): the tightest
// window still counting, and the status a headroom means. A window whose reset time passed no longer counts;
// one without a reset time counts for UNDATED_MS after its reading, and a reading older than STALE_MS counts
// for nothing.

export const UNDATED_MS = 60 * 60_000;
export const STALE_MS = 24 * 60 * 60_000;
/** Below this headroom an account is `low`. */
export const LOW_HEADROOM = 0.1;

export type CapacityStatus = 'ok' | 'low' | 'exhausted' | 'rate_limited' | 'unknown';

export interface CapacityRow {
  providerId: string;
  accountId: string;
  /** A catalog model ID for per-model live readings; null for a whole account. */
  model: string | null;
  headroom: number | null;
  resetsAt: string | null;
  status: CapacityStatus;
  /** Of the answers and 429s heard in the last 15 minutes, the share that were 429s; null when none were heard. */
  recentRateLimitedShare: number | null;
  source: GaugeReadingSource;
  observedAt: string;
}

export interface Tightest {
  headroom: number;
  windowId: string;
  remaining: number | null;
  limit: number | null;
  /** The window's announced reset, when it has one. */
  resetsAt: number | null;
  /** When this stops counting: the reset, or UNDATED_MS after the reading. */
  countsUntil: number;
}

const clamp = (x: number) => Math.min(1, Math.max(0, x));

/** The window of a reading with the least headroom that still counts at `now`; null when none does. */
export function tightest(reading: GaugeReading, now: number): Tightest | null {
  const at = Date.parse(reading.collectedAt);
  if (!(now - at < STALE_MS)) return null;
  let best: Tightest | null = null;
  const consider = (t: Tightest) => {
    if (t.countsUntil > now && (best === null || t.headroom < best.headroom)) best = t;
  };
  for (const w of reading.windows) {
    let headroom: number | null = null;
    if (w.limit !== null && w.limit > 0 && w.remaining !== null) headroom = clamp(w.remaining / w.limit);
    else if (w.limit !== null && w.limit > 0 && w.used !== null) headroom = clamp(1 - w.used / w.limit);
    else if (w.utilization !== null) headroom = clamp(1 - w.utilization);
    if (headroom === null) continue;
    const resetsAt = w.resetsAt === null ? null : Date.parse(w.resetsAt);
    consider({
      headroom,
      windowId: w.id,
      remaining: w.remaining,
      limit: w.limit,
      resetsAt,
      countsUntil: resetsAt ?? at + UNDATED_MS,
    });
  }
  const c = reading.credits;
  if (c && c.total !== null && c.total > 0 && c.remaining !== null) {
    consider({
      headroom: clamp(c.remaining / c.total),
      windowId: 'credits',
      remaining: c.remaining,
      limit: c.total,
      resetsAt: null,
      countsUntil: at + UNDATED_MS,
    });
  }
  return best;
}

export function statusOf(headroom: number | null, rateLimited = false): CapacityStatus {
  if (rateLimited) return 'rate_limited';
  if (headroom === null) return 'unknown';
  if (headroom === 0) return 'exhausted';
  return headroom < LOW_HEADROOM ? 'low' : 'ok';
}
