// Request-rate headroom per provider and model, learned from the rate-limit headers the relay already passes
// back and from 429s. A reading lasts until the reset time the provider announced, then decays to "unknown"
// (the window has refilled). Smart Route's capacity strategy reads it through CapacitySignal, behind which
// Gauge adds its polled account readings (control/gauge/capacity-signal.ts).

import { parseDuration } from '../protocol/durations.ts';

export { parseDuration };

export interface CapacityReading {
  /** 0 (exhausted) to 1 (untouched), or null when the provider gave a remaining count without a limit. */
  headroom: number;
  remaining: number | null;
  limit: number | null;
  /** Milliseconds since the epoch when the window refills; the reading is dropped then. */
  resetAt: number;
  /** `gauge`: a Gauge account's polled reading (control/gauge/capacity-signal.ts). */
  source: 'headers' | 'rate_limited' | 'gauge';
  /** Milliseconds since the epoch when this was heard or read. */
  observedAt: number;
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
  /** Every model with a current reading or recent traffic (Gauge's capacity route lists them). */
  entries(now?: number): CapacityEntry[];
}

export interface CapacityEntry {
  modelId: string;
  reading: CapacityReading | null;
  /** Answers and 429s heard in the last RECENT_MS. */
  answers: number;
  rateLimited: number;
  /** When the model's last answer or 429 was heard; null when only a reading is left. */
  lastAt: number | null;
}

/** Without a reset time a reading still must not pin a route forever. */
const DEFAULT_WINDOW_MS = 60_000;
/** A 429 without retry-after: stay away briefly, as clients following RFC 6585 would. */
const RATE_LIMITED_MS = 10_000;
/** How far back `entries` counts answers and 429s (a recent rate-limited share), in whole minutes. */
export const RECENT_MS = 15 * 60_000;
const SLOT_MS = 60_000;

/** Per model: answers and 429s per minute slot, oldest first, only slots inside RECENT_MS. */
type Recent = { slot: number; answers: number; limited: number; at: number }[];

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
  const recent = new Map<string, Recent>();

  function heard(modelId: string, now: number, limited: boolean): void {
    const slot = Math.floor(now / SLOT_MS);
    let slots = recent.get(modelId);
    if (!slots) recent.set(modelId, (slots = []));
    let last = slots[slots.length - 1];
    if (last?.slot !== slot) {
      slots.push((last = { slot, answers: 0, limited: 0, at: now }));
      while (slots[0]!.slot <= slot - RECENT_MS / SLOT_MS) slots.shift();
    }
    last.at = now;
    if (limited) last.limited += 1;
    else last.answers += 1;
  }

  function read(modelId: string, now = Date.now()): CapacityReading | null {
    const r = readings.get(modelId);
    if (!r) return null;
    if (r.resetAt <= now) {
      readings.delete(modelId);
      return null;
    }
    return r;
  }

  return {
    read,
    observeHeaders(modelId, h, now = Date.now()) {
      heard(modelId, now, false);
      const remaining = count(h['x-ratelimit-remaining-requests'] ?? h['anthropic-ratelimit-requests-remaining']);
      if (remaining === null) return;
      const limit = count(h['x-ratelimit-limit-requests'] ?? h['anthropic-ratelimit-requests-limit']);
      const retryAfter = count(h['retry-after']);
      const resetAt =
        resetAtOf(h['x-ratelimit-reset-requests'] ?? h['anthropic-ratelimit-requests-reset'], now) ??
        (retryAfter !== null ? now + retryAfter * 1000 : now + DEFAULT_WINDOW_MS);
      const headroom = remaining === 0 ? 0 : limit !== null && limit > 0 ? Math.min(1, remaining / limit) : 1;
      readings.set(modelId, { headroom, remaining, limit, resetAt, source: 'headers', observedAt: now });
    },
    observeRateLimited(modelId, retryAfterSeconds, now = Date.now()) {
      heard(modelId, now, true);
      const resetAt = now + (retryAfterSeconds !== null ? retryAfterSeconds * 1000 : RATE_LIMITED_MS);
      readings.set(modelId, {
        headroom: 0,
        remaining: 0,
        limit: null,
        resetAt,
        source: 'rate_limited',
        observedAt: now,
      });
    },
    entries(now = Date.now()) {
      const oldest = Math.floor(now / SLOT_MS) - RECENT_MS / SLOT_MS;
      const out: CapacityEntry[] = [];
      for (const modelId of new Set([...readings.keys(), ...recent.keys()])) {
        const slots = (recent.get(modelId) ?? []).filter((s) => s.slot > oldest);
        if (slots.length === 0) recent.delete(modelId);
        const reading = read(modelId, now);
        const answers = slots.reduce((n, s) => n + s.answers, 0);
        const rateLimited = slots.reduce((n, s) => n + s.limited, 0);
        if (reading !== null || answers + rateLimited > 0)
          out.push({
            modelId,
            reading,
            answers,
            rateLimited,
            lastAt: slots.length === 0 ? null : slots[slots.length - 1]!.at,
          });
      }
      return out.sort((a, b) => (a.modelId < b.modelId ? -1 : 1));
    },
  };
}
