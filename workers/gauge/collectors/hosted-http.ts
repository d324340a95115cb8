import { request, type Dispatcher } from 'undici';
import { readText } from '../../shared/read-text.ts';
import { fromTransportError, retryAfterSeconds } from '../../shared/upstream-errors.ts';
import { CollectorError, type CollectContext } from './types.ts';

// The one HTTP path of the hosted-provider collectors (openai, anthropic, openrouter, github-copilot): a GET
// that returns parsed JSON or throws a CollectorError whose message names the provider and the status, never
// the credential, the body or anything the provider said (bodies can echo keys, org IDs and emails).

/** A usage report is a few KB per page; anything near this is not what the reference documents. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Error bodies are drained, not read: nothing from them is kept. */
const MAX_DRAIN_BYTES = 64 * 1024;

export interface GetJsonOptions {
  /** Statuses handed back to the caller instead of thrown (an optional endpoint's 403 or 404). */
  passStatuses?: readonly number[];
}

export type JsonAnswer =
  | { status: 200; json: unknown; retryAfterMs: number | undefined }
  | { status: number; json: null; retryAfterMs: undefined };

function headerValue(headers: Dispatcher.ResponseData['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function retryAfterMs(headers: Dispatcher.ResponseData['headers']): number | undefined {
  const seconds = retryAfterSeconds(headerValue(headers, 'retry-after'));
  // A day is already far beyond any documented back-off; a bigger figure is not trusted as given.
  return seconds === null ? undefined : Math.min(seconds, 86_400) * 1000;
}

/** Walks undici's `cause` chain: socket failures arrive wrapped (`TypeError: terminated`). */
function isAbort(err: unknown, signal: AbortSignal): boolean {
  if (signal.aborted) return true;
  let current: unknown = err;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const { name, code } = current as { name?: unknown; code?: unknown };
    if (name === 'AbortError' || code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * The proxy's classification of network failures (one table for the service): connect-side failures are
 * `unreachable`, a head or body time-out `timeout`, broken HTTP or an answer cut short `upstream_error`.
 * Anything else is a bug and is rethrown; the gauge actor reports it by code only.
 */
function transportError(err: unknown, signal: AbortSignal, provider: string, answered: boolean): CollectorError {
  if (isAbort(err, signal)) return new CollectorError('timeout', `${provider} did not answer before the time limit.`);
  const classified = fromTransportError(err, { providerId: provider, credential: null }, answered);
  if (classified === null) throw err;
  if (classified.code === 'UPSTREAM_UNREACHABLE')
    return new CollectorError('unreachable', `${provider} could not be reached.`);
  if (classified.code === 'UPSTREAM_TIMEOUT')
    return new CollectorError('timeout', `${provider} did not answer in time.`);
  return new CollectorError('upstream_error', `${provider} answered with a broken or incomplete HTTP response.`);
}

/** The body as text, or null when it is larger than `max` (then abandoned, not buffered). */
async function readBody(body: Dispatcher.ResponseData['body'], max: number): Promise<string | null> {
  const { text, complete } = await readText(body, max);
  return complete ? text : null;
}

/**
 * GitHub answers an exhausted rate limit with 403 (or 429) and `x-ratelimit-remaining: 0`, or a secondary
 * limit with `retry-after`; its `x-ratelimit-reset` is epoch seconds.
 */
function rateLimitedForbidden(headers: Dispatcher.ResponseData['headers']): boolean {
  return headerValue(headers, 'x-ratelimit-remaining') === '0' || headerValue(headers, 'retry-after') !== undefined;
}

function resetWaitMs(headers: Dispatcher.ResponseData['headers']): number | undefined {
  const reset = Number(headerValue(headers, 'x-ratelimit-reset'));
  if (!Number.isInteger(reset) || reset <= 0) return undefined;
  return Math.min(Math.max(0, reset * 1000 - Date.now()), 86_400_000);
}

function statusError(status: number, headers: Dispatcher.ResponseData['headers'], provider: string): CollectorError {
  if (status === 429 || (status === 403 && rateLimitedForbidden(headers))) {
    const wait = retryAfterMs(headers) ?? resetWaitMs(headers);
    return new CollectorError('rate_limited', `${provider} is rate limiting (HTTP ${status}).`, {
      upstreamStatus: status,
      ...(wait === undefined ? {} : { retryAfterMs: wait }),
    });
  }
  if (status === 401 || status === 403) {
    return new CollectorError('auth_failed', `${provider} rejected the credential (HTTP ${status}).`, {
      upstreamStatus: status,
    });
  }
  return new CollectorError('upstream_error', `${provider} answered with HTTP ${status}.`, { upstreamStatus: status });
}

/** GET `url` and parse its JSON body; every failure is a CollectorError (see the file comment). */
export async function getJson(
  ctx: CollectContext,
  provider: string,
  url: URL,
  headers: Record<string, string>,
  options: GetJsonOptions = {},
): Promise<JsonAnswer> {
  let res: Dispatcher.ResponseData;
  try {
    res = await request(url, {
      method: 'GET',
      headers: { accept: 'application/json', ...headers },
      signal: ctx.signal,
    });
  } catch (err) {
    throw transportError(err, ctx.signal, provider, false);
  }
  if (res.statusCode !== 200) {
    await readBody(res.body, MAX_DRAIN_BYTES).catch(() => null);
    if (options.passStatuses?.includes(res.statusCode))
      return { status: res.statusCode, json: null, retryAfterMs: undefined };
    throw statusError(res.statusCode, res.headers, provider);
  }
  let text: string | null;
  try {
    text = await readBody(res.body, MAX_BODY_BYTES);
  } catch (err) {
    throw transportError(err, ctx.signal, provider, true);
  }
  if (text === null)
    throw new CollectorError('malformed', `${provider} answered with a body over ${MAX_BODY_BYTES} bytes.`);
  try {
    return { status: 200, json: JSON.parse(text) as unknown, retryAfterMs: retryAfterMs(res.headers) };
  } catch {
    throw new CollectorError('malformed', `${provider} answered with a body that is not JSON.`);
  }
}

/**
 * `config.baseUrl` when set (tests point it at a loopback fake), the provider's public API otherwise. Only
 * http(s) is accepted, and the URL's own path is kept as the prefix every endpoint is joined to.
 */
export function baseUrlOf(ctx: CollectContext, fallback: string, provider: string): string {
  const configured = ctx.config.baseUrl;
  if (configured === undefined || configured === null) return fallback;
  if (typeof configured !== 'string' || configured.length > 2048) {
    throw new CollectorError('not_configured', `The ${provider} source's baseUrl is not a URL.`);
  }
  let parsed: URL;
  try {
    parsed = new URL(configured);
  } catch {
    throw new CollectorError('not_configured', `The ${provider} source's baseUrl is not a URL.`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new CollectorError('not_configured', `The ${provider} source's baseUrl must be http or https.`);
  }
  // Endpoint paths and queries are appended to it, and a credential never rides in a URL.
  if (parsed.search !== '' || parsed.hash !== '' || parsed.username !== '' || parsed.password !== '') {
    throw new CollectorError(
      'not_configured',
      `The ${provider} source's baseUrl must not carry a query, fragment or user info.`,
    );
  }
  return parsed.href.replace(/\/+$/, '');
}

/** `base` + `path` with the query, values as given (arrays are not used by these endpoints). */
export function endpoint(base: string, path: string, query: Record<string, string | undefined> = {}): URL {
  const url = new URL(base + path);
  for (const [name, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(name, value);
  return url;
}

/** Provider keys and GitHub tokens are printable ASCII; anything else could not be sent as a header value. */
const CREDENTIAL = /^[\x21-\x7e]{1,4096}$/;

export function requireCredential(ctx: CollectContext, provider: string): string {
  if (typeof ctx.credential !== 'string' || ctx.credential === '') {
    throw new CollectorError('not_configured', `No credential is stored for this ${provider} source.`);
  }
  if (!CREDENTIAL.test(ctx.credential)) {
    throw new CollectorError(
      'not_configured',
      `The stored ${provider} credential is not a usable key (unexpected characters or length).`,
    );
  }
  return ctx.credential;
}
