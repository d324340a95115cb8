import { ServiceError, type ErrorCode } from '../../protocol/errors.ts';
import { redactSecrets } from '../../protocol/redact.ts';
import { isRecord } from './shape.ts';

// Upstream failures -> our error codes (docs/api.md, error table). What the provider said about the failure
// is quoted in details, short and scrubbed: the stored credential and anything secret-shaped never leave.

export interface UpstreamContext {
  providerId: string;
  /** Scrubbed from every quoted text, since some providers echo the key they rejected. */
  credential: string | null;
}

type Headers = Readonly<Record<string, string | string[] | undefined>>;

const QUOTE_MAX = 500;
const RATE_LIMITED = 'The provider is rate limiting requests.';

function scrub(text: string, credential: string | null): string {
  const clean = credential === null || credential === '' ? text : text.replaceAll(credential, '[redacted]');
  // Truncated after redaction so that a cut cannot leave half a secret unmatched by the patterns.
  return redactSecrets(clean).slice(0, QUOTE_MAX);
}

/**
 * The provider's own account of the error from the shapes in use: `{error: {type, code, message}}` (styleA,
 * llama-server, OpenRouter), `{type: "error", error: {type, message}}` (Anthropic), `{error: "..."}` (Ollama).
 * Anything else (an HTML page from a proxy) is quoted as text.
 */
function upstreamQuote(body: string, credential: string | null): Record<string, string | number> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    const text = body.replace(/\s+/g, ' ').trim();
    return text === '' ? {} : { upstreamMessage: scrub(text, credential) };
  }
  const error = isRecord(parsed) ? parsed.error : undefined;
  if (typeof error === 'string') return { upstreamMessage: scrub(error, credential) };
  if (!isRecord(error)) return {};
  const out: Record<string, string | number> = {};
  if (typeof error.type === 'string') out.upstreamType = scrub(error.type, credential);
  if (typeof error.code === 'string') out.upstreamCode = scrub(error.code, credential);
  else if (typeof error.code === 'number' && Number.isFinite(error.code)) out.upstreamCode = error.code;
  if (typeof error.message === 'string') out.upstreamMessage = scrub(error.message, credential);
  return out;
}

function headerValue(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** `retry-after` as whole seconds from now: delta-seconds or an HTTP date (RFC 9110 section 10.2.3). */
export function retryAfterSeconds(value: string | undefined, now: number = Date.now()): number | null {
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  // All three HTTP-date forms open with a day name; Date.parse alone would take "-5" for a year.
  if (!/^[A-Za-z]{3}/.test(trimmed)) return null;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}

/**
 * Our sentence, then the provider's own reason (scrubbed and bounded already): agents show `error.message`
 * only, and "HTTP 400" alone does not tell a user what to fix.
 */
function withReason(ours: string, quote: Record<string, string | number>): string {
  const reason = quote.upstreamMessage;
  return typeof reason === 'string' && reason !== '' ? `${ours} The provider said: ${reason}` : ours;
}

/** A non-2xx answer. The status stays in details, so 401 and 403 (or 500 and 529) remain apart. */
export function fromUpstreamStatus(
  status: number,
  headers: Headers,
  body: string,
  context: UpstreamContext,
): ServiceError {
  const quote = upstreamQuote(body, context.credential);
  const details: Record<string, unknown> = { providerId: context.providerId, upstreamStatus: status, ...quote };
  if (status === 401 || status === 403) {
    return new ServiceError('UPSTREAM_AUTH_FAILED', withReason('The provider rejected the stored credential.', quote), {
      details,
    });
  }
  if (status === 429) {
    const message = withReason(RATE_LIMITED, quote);
    const retryAfter = retryAfterSeconds(headerValue(headers, 'retry-after'));
    if (retryAfter === null) return new ServiceError('UPSTREAM_RATE_LIMITED', message, { details });
    return new ServiceError('UPSTREAM_RATE_LIMITED', message, {
      details: { ...details, retryAfter },
      headers: { 'retry-after': String(retryAfter) },
    });
  }
  return new ServiceError('UPSTREAM_ERROR', withReason(`The provider answered with HTTP ${status}.`, quote), {
    details,
  });
}

interface Transport {
  code: ErrorCode;
  reason: string;
}

const UNREACHABLE = (reason: string): Transport => ({ code: 'UPSTREAM_UNREACHABLE', reason });

/**
 * Node and undici error codes. A connect time-out is UNREACHABLE, not TIMEOUT: the provider was never
 * reached, which is what route packs' `unreachable` retry class and the operator's fix (address, firewall)
 * are about; TIMEOUT means a provider that accepted the request and then stalled.
 */
const TRANSPORT_CODES: Readonly<Record<string, Transport>> = {
  ECONNREFUSED: UNREACHABLE('connection_refused'),
  ECONNRESET: UNREACHABLE('connection_reset'),
  EPIPE: UNREACHABLE('connection_reset'),
  UND_ERR_SOCKET: UNREACHABLE('connection_reset'),
  ENOTFOUND: UNREACHABLE('dns'),
  EAI_AGAIN: UNREACHABLE('dns'),
  EAI_FAIL: UNREACHABLE('dns'),
  EHOSTUNREACH: UNREACHABLE('network'),
  ENETUNREACH: UNREACHABLE('network'),
  EHOSTDOWN: UNREACHABLE('network'),
  ENETDOWN: UNREACHABLE('network'),
  EADDRNOTAVAIL: UNREACHABLE('network'),
  ETIMEDOUT: UNREACHABLE('connect_timeout'),
  UND_ERR_CONNECT_TIMEOUT: UNREACHABLE('connect_timeout'),
  EPROTO: UNREACHABLE('tls'),
  CERT_HAS_EXPIRED: UNREACHABLE('tls'),
  CERT_NOT_YET_VALID: UNREACHABLE('tls'),
  DEPTH_ZERO_SELF_SIGNED_CERT: UNREACHABLE('tls'),
  SELF_SIGNED_CERT_IN_CHAIN: UNREACHABLE('tls'),
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: UNREACHABLE('tls'),
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: UNREACHABLE('tls'),
  UND_ERR_HEADERS_TIMEOUT: { code: 'UPSTREAM_TIMEOUT', reason: 'head_timeout' },
  UND_ERR_BODY_TIMEOUT: { code: 'UPSTREAM_TIMEOUT', reason: 'idle_timeout' },
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: { code: 'UPSTREAM_ERROR', reason: 'malformed_http' },
  UND_ERR_RES_EXCEEDED_MAX_SIZE: { code: 'UPSTREAM_ERROR', reason: 'malformed_http' },
  UND_ERR_HEADERS_OVERFLOW: { code: 'UPSTREAM_ERROR', reason: 'malformed_http' },
};

const MALFORMED: Transport = { code: 'UPSTREAM_ERROR', reason: 'malformed_http' };
const TRUNCATED: Transport = { code: 'UPSTREAM_ERROR', reason: 'truncated' };

/**
 * undici's errors for an answer that breaks HTTP/1.1, by class name: its HTTPParserError has no code when
 * llhttp names none (`HTTP/1.1 2OO WHAT` is "Invalid status code" with `code` undefined).
 */
const MALFORMED_NAMES: ReadonlySet<string> = new Set([
  'HTTPParserError',
  'ResponseContentLengthMismatchError',
  'ResponseExceededMaxSizeError',
  'HeadersOverflowError',
]);

function classify(code: string): Transport | undefined {
  const known = TRANSPORT_CODES[code];
  if (known !== undefined) return known;
  if (code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_')) return UNREACHABLE('tls');
  if (code.startsWith('HPE_')) return MALFORMED;
  return undefined;
}

/** The classification of one error of the cause chain, and the name it goes by in `details.errorCode`. */
function classifyError(err: Record<string, unknown>): { found: Transport; name: string } | undefined {
  const { code, name } = err;
  const byCode = typeof code === 'string' ? classify(code) : undefined;
  if (byCode !== undefined) return { found: byCode, name: code as string };
  if (typeof name === 'string' && MALFORMED_NAMES.has(name))
    return { found: MALFORMED, name: typeof code === 'string' ? code : name };
  return undefined;
}

const MESSAGES: Partial<Record<ErrorCode, string>> = {
  UPSTREAM_UNREACHABLE: 'The provider could not be reached.',
  UPSTREAM_TIMEOUT: 'The provider did not answer in time.',
  UPSTREAM_ERROR: 'The provider answered with a malformed HTTP response.',
};

/**
 * A thrown network failure, or null when the error is not one (a bug stays a bug: the caller rethrows it and
 * it becomes INTERNAL in the one place that does that). undici wraps socket errors in `cause` (a body read
 * ends in `TypeError: terminated` caused by UND_ERR_SOCKET), so the chain is walked. `answered`: the
 * upstream's head had come, so a connection that ends now cut its answer short (a chunked body without its
 * last chunk, fewer bytes than its Content-Length): a malformed answer, not an unreachable provider.
 */
export function fromTransportError(err: unknown, context: UpstreamContext, answered = false): ServiceError | null {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && isRecord(current); depth++) {
    const classified = classifyError(current);
    if (classified !== undefined) {
      const found = answered && classified.found.code === 'UPSTREAM_UNREACHABLE' ? TRUNCATED : classified.found;
      const message =
        found === TRUNCATED
          ? 'The provider ended its answer before it was complete.'
          : (MESSAGES[found.code] ?? 'The provider request failed.');
      return new ServiceError(found.code, message, {
        details: { providerId: context.providerId, reason: found.reason, errorCode: classified.name },
      });
    }
    current = current.cause;
  }
  return null;
}
