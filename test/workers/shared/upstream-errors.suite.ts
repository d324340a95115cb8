import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromTransportError, fromUpstreamStatus, retryAfterSeconds } from '../../../workers/shared/upstream-errors.ts';

const KEY = 'plain-credential-without-a-secret-shape';
const CONTEXT = { providerId: 'p1', credential: KEY };

describe('fromUpstreamStatus', () => {
  for (const [status, code] of [
    [401, 'UPSTREAM_AUTH_FAILED'],
    [403, 'UPSTREAM_AUTH_FAILED'],
    [429, 'UPSTREAM_RATE_LIMITED'],
    [400, 'UPSTREAM_ERROR'],
    [404, 'UPSTREAM_ERROR'],
    [302, 'UPSTREAM_ERROR'],
    [500, 'UPSTREAM_ERROR'],
    [503, 'UPSTREAM_ERROR'],
    [529, 'UPSTREAM_ERROR'],
  ] as const) {
    it(`${status} -> ${code}, keeping the status`, () => {
      const err = fromUpstreamStatus(status, {}, '', CONTEXT);
      assert.equal(err.code, code);
      assert.equal(err.details.upstreamStatus, status);
      assert.equal(err.details.providerId, 'p1');
    });
  }

  it("quotes a styleA error's type, code and message", () => {
    const body = JSON.stringify({
      error: {
        message: 'The model `x` does not exist',
        type: 'invalid_request_error',
        param: null,
        code: 'model_not_found',
      },
    });
    assert.deepEqual(fromUpstreamStatus(404, {}, body, CONTEXT).details, {
      providerId: 'p1',
      upstreamStatus: 404,
      upstreamType: 'invalid_request_error',
      upstreamCode: 'model_not_found',
      upstreamMessage: 'The model `x` does not exist',
    });
  });

  it("puts the provider's reason into the message, scrubbed and bounded, keeping the code", () => {
    const quoted = (status: number, error: unknown, credential: string | null = null) =>
      fromUpstreamStatus(status, {}, JSON.stringify({ error }), { providerId: 'p1', credential });
    const bad = quoted(400, {
      message: "Invalid 'user': string too long.",
      type: 'invalid_request_error',
      code: 'string_above_max_length',
    });
    assert.equal(bad.code, 'UPSTREAM_ERROR');
    assert.equal(
      bad.message,
      "The provider answered with HTTP 400. The provider said: Invalid 'user': string too long.",
    );
    const auth = quoted(
      401,
      { message: 'Incorrect API key provided: sk-live-0123456789abcdef.' },
      'sk-live-0123456789abcdef',
    );
    assert.equal(auth.code, 'UPSTREAM_AUTH_FAILED');
    assert.equal(
      auth.message,
      'The provider rejected the stored credential. The provider said: Incorrect API key provided: [redacted].',
    );
    assert.match(
      quoted(429, { message: 'Slow down' }).message,
      /rate limiting requests\. The provider said: Slow down$/,
    );
    assert.equal(
      quoted(400, { message: 'y'.repeat(5000) }).message.length,
      'The provider answered with HTTP 400. The provider said: '.length + 500,
    );
    assert.equal(
      fromUpstreamStatus(500, {}, '', { providerId: 'p1', credential: null }).message,
      'The provider answered with HTTP 500.',
    );
  });

  it("quotes Anthropic's error envelope", () => {
    const body = JSON.stringify({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
      request_id: 'req_1',
    });
    const { details } = fromUpstreamStatus(529, {}, body, CONTEXT);
    assert.equal(details.upstreamType, 'overloaded_error');
    assert.equal(details.upstreamMessage, 'Overloaded');
  });

  it("quotes Ollama's string error and llama-server's numeric code", () => {
    assert.equal(
      fromUpstreamStatus(500, {}, '{"error":"model requires more system memory"}', CONTEXT).details.upstreamMessage,
      'model requires more system memory',
    );
    const llama = fromUpstreamStatus(
      503,
      {},
      '{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}',
      CONTEXT,
    );
    assert.equal(llama.details.upstreamCode, 503);
    assert.equal(llama.details.upstreamType, 'unavailable_error');
  });

  it('quotes a non-JSON body as collapsed text, and nothing for an empty one', () => {
    assert.equal(
      fromUpstreamStatus(502, {}, '<html>\n  <h1>502 Bad Gateway</h1>\n</html>', CONTEXT).details.upstreamMessage,
      '<html> <h1>502 Bad Gateway</h1> </html>',
    );
    assert.equal('upstreamMessage' in fromUpstreamStatus(502, {}, '  ', CONTEXT).details, false);
  });

  it('cuts the quote to 500 characters', () => {
    const body = JSON.stringify({ error: { message: 'x'.repeat(2000), type: 't'.repeat(900) } });
    const { details } = fromUpstreamStatus(400, {}, body, CONTEXT);
    assert.equal(details.upstreamMessage, 'x'.repeat(500));
    assert.equal(details.upstreamType, 't'.repeat(500));
  });

  it('removes the credential and secret-shaped text, even when the credential sits across the cut', () => {
    const body = JSON.stringify({
      error: { message: `${'y'.repeat(480)} key ${KEY} and sk-proj-abcdefgh12345678 and Bearer abc.def` },
    });
    const err = fromUpstreamStatus(401, {}, body, CONTEXT);
    const text = JSON.stringify(err.toPayload());
    assert.equal(text.includes(KEY), false);
    assert.equal(text.includes(KEY.slice(0, 12)), false);
    const other = fromUpstreamStatus(
      400,
      {},
      JSON.stringify({ error: { message: `bad ${KEY}; sk-proj-abcdefgh12345678; Bearer abc.def` } }),
      CONTEXT,
    );
    assert.equal(other.details.upstreamMessage, 'bad [redacted]; [redacted]; Bearer [redacted]');
  });

  it('relays retry-after on 429 as seconds, in details and as a header', () => {
    const err = fromUpstreamStatus(429, { 'retry-after': '12' }, '', CONTEXT);
    assert.equal(err.details.retryAfter, 12);
    assert.deepEqual(err.headers, { 'retry-after': '12' });
    const none = fromUpstreamStatus(429, {}, '', CONTEXT);
    assert.equal('retryAfter' in none.details, false);
    assert.deepEqual(none.headers, {});
  });
});

describe('retryAfterSeconds', () => {
  const now = Date.UTC(2025, 5, 1, 12, 0, 0);
  it('reads delta-seconds', () => assert.equal(retryAfterSeconds(' 30 ', now), 30));
  it('reads an HTTP date as seconds from now', () =>
    assert.equal(retryAfterSeconds('Sun, 01 Jun 2025 12:01:30 GMT', now), 90));
  it('a date in the past is 0', () => assert.equal(retryAfterSeconds('Sun, 01 Jun 2025 11:00:00 GMT', now), 0));
  it('ignores garbage and absence', () => {
    assert.equal(retryAfterSeconds('soon', now), null);
    assert.equal(retryAfterSeconds('-5', now), null);
    assert.equal(retryAfterSeconds(undefined, now), null);
  });
});

function withCode(code: string, message = 'boom'): Error {
  return Object.assign(new Error(message), { code });
}

describe('fromTransportError', () => {
  for (const [code, expected, reason] of [
    ['ECONNREFUSED', 'UPSTREAM_UNREACHABLE', 'connection_refused'],
    ['ENOTFOUND', 'UPSTREAM_UNREACHABLE', 'dns'],
    ['EAI_AGAIN', 'UPSTREAM_UNREACHABLE', 'dns'],
    ['EHOSTUNREACH', 'UPSTREAM_UNREACHABLE', 'network'],
    ['ECONNRESET', 'UPSTREAM_UNREACHABLE', 'connection_reset'],
    ['UND_ERR_SOCKET', 'UPSTREAM_UNREACHABLE', 'connection_reset'],
    ['UND_ERR_CONNECT_TIMEOUT', 'UPSTREAM_UNREACHABLE', 'connect_timeout'],
    ['CERT_HAS_EXPIRED', 'UPSTREAM_UNREACHABLE', 'tls'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'UPSTREAM_UNREACHABLE', 'tls'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'UPSTREAM_UNREACHABLE', 'tls'],
    ['UND_ERR_HEADERS_TIMEOUT', 'UPSTREAM_TIMEOUT', 'head_timeout'],
    ['UND_ERR_BODY_TIMEOUT', 'UPSTREAM_TIMEOUT', 'idle_timeout'],
    ['HPE_INVALID_CONSTANT', 'UPSTREAM_ERROR', 'malformed_http'],
  ] as const) {
    it(`${code} -> ${expected} (${reason})`, () => {
      const err = fromTransportError(withCode(code), CONTEXT);
      assert.equal(err?.code, expected);
      assert.deepEqual(err?.details, { providerId: 'p1', reason, errorCode: code });
    });
  }

  // undici's HTTPParserError carries no code when llhttp names none (a status line `HTTP/1.1 2OO WHAT`).
  for (const name of ['HTTPParserError', 'ResponseContentLengthMismatchError', 'ResponseExceededMaxSizeError']) {
    it(`${name} without a code -> UPSTREAM_ERROR (malformed_http), by its class name`, () => {
      const err = Object.assign(new Error('Response does not match the HTTP/1.1 protocol (Invalid status code)'), {
        name,
        code: undefined,
      });
      const mapped = fromTransportError(err, CONTEXT);
      assert.equal(mapped?.code, 'UPSTREAM_ERROR');
      assert.deepEqual(mapped?.details, { providerId: 'p1', reason: 'malformed_http', errorCode: name });
      assert.equal(mapped?.status, 502);
    });
  }

  it("classifies undici's own HTTPParserError thrown for a bad status line", async () => {
    const { errors } = await import('undici');
    const parser = new errors.HTTPParserError('Response does not match the HTTP/1.1 protocol (Invalid status code)');
    assert.equal(parser.code, undefined);
    assert.equal(fromTransportError(parser, CONTEXT)?.code, 'UPSTREAM_ERROR');
  });

  it('a connection that ends after the head cut the answer short: UPSTREAM_ERROR (truncated), not UNREACHABLE', () => {
    const closed = Object.assign(new Error('other side closed'), { name: 'SocketError', code: 'UND_ERR_SOCKET' });
    assert.equal(fromTransportError(closed, CONTEXT)?.code, 'UPSTREAM_UNREACHABLE');
    const cut = fromTransportError(closed, CONTEXT, true);
    assert.equal(cut?.code, 'UPSTREAM_ERROR');
    assert.deepEqual(cut?.details, { providerId: 'p1', reason: 'truncated', errorCode: 'UND_ERR_SOCKET' });
    // A stall after the head stays a time-out.
    assert.equal(fromTransportError(withCode('UND_ERR_BODY_TIMEOUT'), CONTEXT, true)?.code, 'UPSTREAM_TIMEOUT');
  });

  it("finds the code in undici's cause chain", () => {
    const terminated = Object.assign(new TypeError('terminated'), {
      cause: withCode('UND_ERR_SOCKET', 'other side closed'),
    });
    assert.equal(fromTransportError(terminated, CONTEXT)?.code, 'UPSTREAM_UNREACHABLE');
  });

  it('never quotes the original message, which can hold the URL', () => {
    const err = fromTransportError(withCode('ECONNREFUSED', `connect ECONNREFUSED http://user:${KEY}@host`), CONTEXT);
    assert.equal(JSON.stringify(err?.toPayload()).includes(KEY), false);
  });

  it('leaves anything else alone, to become INTERNAL where every unknown throw does', () => {
    assert.equal(fromTransportError(new TypeError('x is not a function'), CONTEXT), null);
    assert.equal(fromTransportError(withCode('UND_ERR_INVALID_ARG'), CONTEXT), null);
    assert.equal(fromTransportError('a string', CONTEXT), null);
  });
});
