import type { AnyReply, Handler, RecordedRequest } from '../http.ts';

// A provider account's several keys, each with its own request limit per window, as OpenAI enforces them: every
// answer carries the key's x-ratelimit-{limit,remaining,reset}-requests, and a key past its limit gets 429 with
// `retry-after` until its window ends. A revoked key gets 401. The fake counts each key's calls.

export interface KeyLimit {
  /** Requests per window. */
  requests: number;
  windowMs: number;
}

export interface KeyLimits {
  /** Wraps every route: the key's headers on each answer, its 429 past the limit, its 401 once revoked. */
  wrap(routes: Record<string, Handler>): Record<string, Handler>;
  /** Whether a key is one of the account's (revoked ones too: those get their 401 from the route). */
  knows(key: string | null): boolean;
  /** Answers served per key. */
  served: Map<string, number>;
  /** Answers refused with 429 per key. */
  limited: Map<string, number>;
  revoke(key: string): void;
}

export function keyLimits(
  limits: Readonly<Record<string, KeyLimit>>,
  keyOf: (req: RecordedRequest) => string | null,
  now: () => number = Date.now,
): KeyLimits {
  const windows = new Map<string, { start: number; count: number }>();
  const served = new Map<string, number>();
  const limited = new Map<string, number>();
  const revoked = new Set<string>();

  function headersFor(limit: KeyLimit, count: number, start: number): Record<string, string> {
    const left = Math.max(0, start + limit.windowMs - now());
    return {
      'x-ratelimit-limit-requests': String(limit.requests),
      'x-ratelimit-remaining-requests': String(Math.max(0, limit.requests - count)),
      'x-ratelimit-reset-requests': `${Math.ceil(left / 1000)}s`,
      ...(count >= limit.requests && { 'retry-after': String(Math.max(1, Math.ceil(left / 1000))) }),
    };
  }

  const wrap =
    (handler: Handler): Handler =>
    async (req, params) => {
      const key = keyOf(req);
      const limit = key === null ? undefined : limits[key];
      if (key === null || limit === undefined) return handler(req, params);
      if (revoked.has(key)) {
        return {
          status: 401,
          body: {
            error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' },
          },
        };
      }
      const at = now();
      let w = windows.get(key);
      if (w === undefined || at - w.start >= limit.windowMs) windows.set(key, (w = { start: at, count: 0 }));
      if (w.count >= limit.requests) {
        limited.set(key, (limited.get(key) ?? 0) + 1);
        return {
          status: 429,
          headers: headersFor(limit, w.count, w.start),
          body: {
            error: { message: 'Rate limit reached for requests.', type: 'requests', code: 'rate_limit_exceeded' },
          },
        };
      }
      w.count++;
      served.set(key, (served.get(key) ?? 0) + 1);
      const reply: AnyReply = await handler(req, params);
      reply.headers = { ...reply.headers, ...headersFor(limit, w.count, w.start) };
      return reply;
    };

  return {
    wrap: (routes) => Object.fromEntries(Object.entries(routes).map(([name, h]) => [name, wrap(h)])),
    knows: (key) => key !== null && limits[key] !== undefined,
    served,
    limited,
    revoke: (key) => void revoked.add(key),
  };
}
