// Request-rate headroom per provider and model, learned from the rate-limit headers the relay already passes
// back and from 429s. A reading lasts until the reset time the provider announced, then decays to "unknown"
// (the window has refilled). Smart Route's capacity strategy reads it through CapacitySignal, so Gauge can
// add polled signals (account dashboards) behind the same interface later.

import { parseDuration } from '../../protocol/durations.ts';

export { parseDuration };

export interface CapacityReading {
  /** 0 (exhausted) to 1 (untouched), or null when the provider gave a remaining count without a limit. */
  headroom: number;
  remaining: number | null;
  limit: number | null;
  /** Milliseconds since the epoch when the window refills; the reading is dropped then. */
  resetAt: number;
  source: 'headers' | 'rate_limited';
}

export interface CapacitySignal {
  /** The current reading for a catalog model (`<providerId>/<upstreamModelId>`), or null when nothing is known. */
  read(modelId: string, now?: number): CapacityReading | null;
}

export interface CapacityTracker extends CapacitySignal {
  /** An answer's head arrived: read its rate-limit headers (names lower-cased). */
  observeHeaders(modelId: string, headers: Readonly<Record<string, string>>, now?: number): void;
  /** The upstream answered 429; `retryAfterSeconds` when it said how long to wait. */
  observeRateLimited(modelId: string, retryAfterSeconds: number | null, now?: number): void;
}

/** Without a reset time a reading still must not pin a route forever. */
const DEFAULT_WINDOW_MS = 60_000;
/** A 429 without retry-after: stay away briefly, as clients following RFC 6585 would. */
const RATE_LIMITED_MS = 10_000;

/** A reset header: a duration (OpenAI), an RFC 3339 instant (Anthropic) or seconds. */
function resetAtOf(value: string | undefined, now: number): number | null {
  if (value === undefined) return null;
  const duration = parseDuration(value);
  if (duration !== null) return now + duration;
  const instant = Date.parse(value);
  return Number.isNaN(instant) ? null : instant;
}

const count = (value: string | undefined): number | null => {
  if (value === undefined || !/^\d+$/.test(value.trim())) return null;
  return Number(value.trim());
};

export function createCapacityTracker(): CapacityTracker {
  const readings = new Map<string, CapacityReading>();
  return {
    read(modelId, now = Date.now()) {
      const r = readings.get(modelId);
      if (!r) return null;
      if (r.resetAt <= now) {
        readings.delete(modelId);
        return null;
      }
      return r;
    },
    observeHeaders(modelId, h, now = Date.now()) {
      const remaining = count(h['x-ratelimit-remaining-requests'] ?? h['anthropic-ratelimit-requests-remaining']);
      if (remaining === null) return;
      const limit = count(h['x-ratelimit-limit-requests'] ?? h['anthropic-ratelimit-requests-limit']);
      const retryAfter = count(h['retry-after']);
      const resetAt =
        resetAtOf(h['x-ratelimit-reset-requests'] ?? h['anthropic-ratelimit-requests-reset'], now) ??
        (retryAfter !== null ? now + retryAfter * 1000 : now + DEFAULT_WINDOW_MS);
      const headroom = remaining === 0 ? 0 : limit !== null && limit > 0 ? Math.min(1, remaining / limit) : 1;
      readings.set(modelId, { headroom, remaining, limit, resetAt, source: 'headers' });
    },
    observeRateLimited(modelId, retryAfterSeconds, now = Date.now()) {
      const resetAt = now + (retryAfterSeconds !== null ? retryAfterSeconds * 1000 : RATE_LIMITED_MS);
      readings.set(modelId, { headroom: 0, remaining: 0, limit: null, resetAt, source: 'rate_limited' });
    },
  };
}
