import { parseDuration } from './durations.ts';

// A key's live headroom from the rate-limit headers of an answer: OpenAI's x-ratelimit-{limit,remaining,reset}-
// {requests,tokens} (resets as durations, `6m0s`), Anthropic's anthropic-ratelimit-{requests,tokens,
// input-tokens,output-tokens}-{limit,remaining,reset} (resets as RFC 3339 instants) and OpenRouter's
// x-ratelimit-{limit,remaining,reset} (epoch milliseconds). Values are bounded before they count.

type Headers = Readonly<Record<string, string | undefined>>;

/** One window of a key's live headroom; null fields where the upstream did not say. */
export interface HeadroomWindow {
  remaining: number | null;
  limit: number | null;
  /** When the window resets (ms since the epoch). */
  resetsAt: number | null;
}

const count = (v: string | undefined): number | null =>
  v !== undefined && /^\d{1,15}$/.test(v.trim()) ? Number(v.trim()) : null;

/** A reset as epoch ms: a duration from `now`, an RFC 3339 instant, or epoch milliseconds. */
function resetAt(v: string | undefined, now: number): number | null {
  if (v === undefined) return null;
  const t = v.trim();
  if (t.length > 40) return null;
  if (/^\d{12,15}$/.test(t)) return Number(t);
  const d = parseDuration(t);
  if (d !== null) return now + d;
  const instant = /^\d{4}-\d{2}-\d{2}T/.test(t) ? Date.parse(t) : Number.NaN;
  return Number.isNaN(instant) ? null : instant;
}

function window(limit: string | undefined, remaining: string | undefined, reset: string | undefined, now: number) {
  const w: HeadroomWindow = { remaining: count(remaining), limit: count(limit), resetsAt: resetAt(reset, now) };
  return w.remaining === null && w.limit === null ? null : w;
}

/** The tighter of two windows (Anthropic's input and output tokens, when it gives no combined one). */
function tighter(a: HeadroomWindow | null, b: HeadroomWindow | null): HeadroomWindow | null {
  if (a === null || b === null) return a ?? b;
  const share = (w: HeadroomWindow) => (w.remaining === null || !w.limit ? 1 : w.remaining / w.limit);
  return share(a) <= share(b) ? a : b;
}

export interface Headroom {
  requests: HeadroomWindow | null;
  tokens: HeadroomWindow | null;
}

export function headroomOf(h: Headers, now: number): Headroom {
  const openai = (k: string) =>
    window(h[`x-ratelimit-limit-${k}`], h[`x-ratelimit-remaining-${k}`], h[`x-ratelimit-reset-${k}`], now);
  const anthropic = (k: string) =>
    window(
      h[`anthropic-ratelimit-${k}-limit`],
      h[`anthropic-ratelimit-${k}-remaining`],
      h[`anthropic-ratelimit-${k}-reset`],
      now,
    );
  const requests =
    openai('requests') ??
    anthropic('requests') ??
    window(h['x-ratelimit-limit'], h['x-ratelimit-remaining'], h['x-ratelimit-reset'], now);
  const tokens =
    openai('tokens') ?? anthropic('tokens') ?? tighter(anthropic('input-tokens'), anthropic('output-tokens'));
  return { requests, tokens };
}

/** `retry-after` as milliseconds from now: seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(v: string | undefined, now: number): number | null {
  if (v === undefined) return null;
  const t = v.trim();
  if (/^\d{1,9}(\.\d+)?$/.test(t)) return Math.round(Number(t) * 1000);
  const date = t.length <= 64 ? Date.parse(t) : Number.NaN;
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
