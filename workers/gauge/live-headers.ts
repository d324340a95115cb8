import type { GaugeReading, GaugeWindow, GaugeWindowKind } from '../../protocol/gauge.ts';
import { LIVE_HEADERS_ACCOUNT_PREFIX } from '../../protocol/gauge-catalog.ts';
import type { GaugeHeaderObservation } from '../../protocol/gauge-messages.ts';
import { parseDuration } from '../../protocol/durations.ts';

// Readings from the rate-limit headers the relay already saw: OpenAI's x-ratelimit-{limit,remaining,reset}-
// {requests,tokens}, Anthropic's anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
// {limit,remaining,reset}, and OpenRouter's x-ratelimit-{limit,remaining,reset}. No request is ever made here.

/** The header names the edge forwards (lower case); nothing else of a response reaches Gauge. */
export const LIVE_HEADER_NAMES: readonly string[] = [
  ...['requests', 'tokens'].flatMap((k) => ['limit', 'remaining', 'reset'].map((f) => `x-ratelimit-${f}-${k}`)),
  ...['requests', 'tokens', 'input-tokens', 'output-tokens'].flatMap((k) =>
    ['limit', 'remaining', 'reset'].map((f) => `anthropic-ratelimit-${k}-${f}`),
  ),
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];

const count = (v: string | undefined): number | null =>
  v !== undefined && /^\d{1,15}$/.test(v.trim()) ? Number(v.trim()) : null;

/** A reset as a duration (OpenAI), an RFC 3339 instant (Anthropic) or epoch milliseconds (OpenRouter). */
function resetOf(v: string | undefined, at: number): string | null {
  if (v === undefined) return null;
  const t = v.trim();
  if (/^\d{12,15}$/.test(t)) return new Date(Number(t)).toISOString();
  const d = parseDuration(t);
  if (d !== null) return new Date(at + d).toISOString();
  const instant = /^\d{4}-\d{2}-\d{2}T/.test(t) ? Date.parse(t) : NaN;
  return Number.isNaN(instant) ? null : new Date(instant).toISOString();
}

function windowOf(
  id: string,
  kind: GaugeWindowKind,
  limit: string | undefined,
  remaining: string | undefined,
  reset: string | undefined,
  at: number,
): GaugeWindow | null {
  const l = count(limit);
  const r = count(remaining);
  if (l === null && r === null) return null;
  const used = l !== null && r !== null ? Math.max(0, l - r) : null;
  return {
    id,
    kind,
    period: null,
    used,
    limit: l,
    remaining: r,
    utilization: used !== null && l! > 0 ? Math.min(1, used / l!) : null,
    resetsAt: resetOf(reset, at),
  };
}

export function liveReading(o: GaugeHeaderObservation): GaugeReading | null {
  const h = o.fields;
  const windows: GaugeWindow[] = [];
  const push = (w: GaugeWindow | null) => void (w && windows.push(w));
  for (const [k, kind] of [
    ['requests', 'requests'],
    ['tokens', 'tokens'],
  ] as const) {
    push(
      windowOf(
        k,
        kind,
        h[`x-ratelimit-limit-${k}`],
        h[`x-ratelimit-remaining-${k}`],
        h[`x-ratelimit-reset-${k}`],
        o.at,
      ),
    );
  }
  for (const [k, kind] of [
    ['requests', 'requests'],
    ['tokens', 'tokens'],
    ['input-tokens', 'input_tokens'],
    ['output-tokens', 'output_tokens'],
  ] as const) {
    push(
      windowOf(
        k,
        kind,
        h[`anthropic-ratelimit-${k}-limit`],
        h[`anthropic-ratelimit-${k}-remaining`],
        h[`anthropic-ratelimit-${k}-reset`],
        o.at,
      ),
    );
  }
  if (windows.length === 0)
    push(
      windowOf(
        'requests',
        'requests',
        h['x-ratelimit-limit'],
        h['x-ratelimit-remaining'],
        h['x-ratelimit-reset'],
        o.at,
      ),
    );
  if (windows.length === 0) return null;
  return {
    accountId: LIVE_HEADERS_ACCOUNT_PREFIX + o.providerRecordId,
    providerId: o.providerId,
    collectedAt: new Date(o.at).toISOString(),
    source: 'live_headers',
    confidence: 'high',
    windows,
    spend: null,
    credits: null,
  };
}
