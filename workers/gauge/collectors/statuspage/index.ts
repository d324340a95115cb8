import type { Collector, CollectContext, CollectResult } from '../types.ts';
import { CollectorError } from '../types.ts';
import { parseSummary, unknownStatus } from './parse.ts';

// One public status page per source (config.baseUrl): GET {baseUrl}/api/v2/summary.json, no credential.
// A feed that cannot be read (unreachable, non-2xx, too large, not JSON, not Statuspage's shape) is a
// successful collection of an `unknown` status, never an outage and never a collection failure: the page is
// somebody else's, its trouble says nothing about our setup, and keeping an older snapshot ("all clear" or
// "major outage") while the feed is unreadable would state more than is known. Only a missing or invalid
// baseUrl, and running out of time, are errors.

const MAX_BODY = 1 << 20;
const MAX_RETRY_MS = 3_600_000;

function configOf(config: Readonly<Record<string, unknown>>): { url: string; providerId: string } {
  const base = config['baseUrl'];
  let url: URL;
  try {
    if (typeof base !== 'string' || base.length > 300) throw new Error();
    url = new URL(base);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error();
  } catch {
    throw new CollectorError('not_configured', 'baseUrl must be an http(s) URL of at most 300 characters');
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new CollectorError('not_configured', 'baseUrl must not carry credentials, a query or a fragment');
  }
  const id = config['providerId'];
  const providerId = typeof id === 'string' && /^[a-z0-9][a-z0-9._-]{0,159}$/.test(id) ? id : 'statuspage';
  return { url: `${url.origin}${url.pathname.replace(/\/+$/, '')}/api/v2/summary.json`, providerId };
}

function retryAfterOf(value: string | null): number | undefined {
  if (value === null) return undefined;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, MAX_RETRY_MS) : undefined;
}

/** The body as text, or null once it passes MAX_BODY (the rest is not read). */
async function boundedText(response: Response): Promise<string | null> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > MAX_BODY) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export const collector: Collector = {
  providerId: 'statuspage',
  async collect(ctx: CollectContext): Promise<CollectResult> {
    const { url, providerId } = configOf(ctx.config);
    const observedAt = () => ctx.now().toISOString();
    const unknown = (why: string, retryAfterMs?: number): CollectResult => ({
      readings: [],
      statuses: [unknownStatus(providerId, why, observedAt())],
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
    let body: string | null;
    try {
      const response = await fetch(url, { signal: ctx.signal, headers: { accept: 'application/json' } });
      if (!response.ok) {
        await response.body?.cancel();
        return unknown(
          `HTTP ${response.status}`,
          response.status === 429 || response.status === 503
            ? retryAfterOf(response.headers.get('retry-after'))
            : undefined,
        );
      }
      body = await boundedText(response);
    } catch {
      if (ctx.signal.aborted) throw new CollectorError('timeout', 'The status page did not answer in time.');
      return unknown('unreachable');
    }
    if (body === null) return unknown('answer too large');
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return unknown('not JSON');
    }
    const status = parseSummary(parsed, providerId, observedAt());
    return status === null ? unknown('not a Statuspage summary') : { readings: [], statuses: [status] };
  },
};
