import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ERROR_CODES,
  ERROR_TABLE,
  errorEnvelope,
  isErrorCode,
  messageKeyOf,
  ServiceError,
  statusOf,
  toServiceError,
  type ErrorCode,
} from '../../protocol/errors.ts';

// The complete code list with its statuses. Adding, removing or re-statusing a code must fail here first.
const EXPECTED_STATUS: Record<string, number> = {
  INVALID_JSON: 400,
  INVALID_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  MODEL_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  GAUGE_DISABLED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  MODEL_ENDPOINT_NOT_SUPPORTED: 400,
  PROVIDER_DISABLED: 409,
  PROVIDER_CREDENTIAL_MISSING: 409,
  UPSTREAM_AUTH_FAILED: 502,
  UPSTREAM_RATE_LIMITED: 429,
  UPSTREAM_ERROR: 502,
  UPSTREAM_UNREACHABLE: 502,
  UPSTREAM_TIMEOUT: 504,
  LIMIT_EXCEEDED: 429,
  SESSION_PAUSED: 429,
  OVERLOADED: 503,
  MODEL_MEMORY_BUSY: 503,
  MODEL_TOO_LARGE: 400,
  INTERNAL: 500,
};

describe('ERROR_TABLE', () => {
  it('holds exactly the specified codes', () => {
    assert.deepEqual([...ERROR_CODES].sort(), Object.keys(EXPECTED_STATUS).sort());
  });

  it('gives every code the specified status', () => {
    const actual = Object.fromEntries(ERROR_CODES.map((code) => [code, statusOf(code)]));
    assert.deepEqual(actual, EXPECTED_STATUS);
  });

  it('gives every code a dotted lowercase messageKey and a non-empty type', () => {
    for (const code of ERROR_CODES) {
      assert.equal(messageKeyOf(code), `errors.${code.toLowerCase()}`);
      assert.match(messageKeyOf(code), /^errors\.[a-z_]+$/);
      assert.match(ERROR_TABLE[code].type, /^[a-z_]+$/, code);
    }
  });

  it('recognises only table codes', () => {
    assert.equal(isErrorCode('INTERNAL'), true);
    assert.equal(isErrorCode('internal'), false);
    assert.equal(isErrorCode('toString'), false);
    assert.equal(isErrorCode('__proto__'), false);
    assert.equal(isErrorCode(500), false);
  });
});

describe('ServiceError', () => {
  it('derives status from the table and defaults param, details and headers', () => {
    const err = new ServiceError('MODEL_NOT_FOUND', 'No such model.');
    assert.equal(err.status, 404);
    assert.equal(err.param, null);
    assert.deepEqual(err.details, {});
    assert.deepEqual(err.headers, {});
    assert.equal(err.name, 'ServiceError');
    assert.ok(err instanceof Error);
  });

  it('round-trips through toPayload/fromPayload', () => {
    const err = new ServiceError('INVALID_REQUEST', '`limit` must be an integer.', {
      param: 'limit',
      details: { max: 500 },
      headers: { 'retry-after': '3' },
    });
    const payload = err.toPayload();
    assert.deepEqual(payload, {
      code: 'INVALID_REQUEST',
      message: '`limit` must be an integer.',
      param: 'limit',
      details: { max: 500 },
      headers: { 'retry-after': '3' },
    });
    // Payloads cross thread boundaries: structuredClone is what postMessage does to them.
    const back = ServiceError.fromPayload(structuredClone(payload));
    assert.ok(back instanceof ServiceError);
    assert.equal(back.code, 'INVALID_REQUEST');
    assert.equal(back.message, err.message);
    assert.equal(back.param, 'limit');
    assert.deepEqual(back.details, { max: 500 });
    assert.deepEqual(back.headers, { 'retry-after': '3' }, 'Retry-After survives the thread boundary');
    assert.equal(back.status, 400);
  });

  it('fills defaults when a payload omits param and details', () => {
    const back = ServiceError.fromPayload({ code: 'OVERLOADED', message: 'Busy.' });
    assert.equal(back.param, null);
    assert.deepEqual(back.details, {});
    assert.equal(back.status, 503);
  });
});

describe('toServiceError', () => {
  it('passes a ServiceError through unchanged', () => {
    const err = new ServiceError('CONFLICT', 'Already exists.');
    assert.equal(toServiceError(err), err);
  });

  for (const [label, thrown] of [
    ['an Error', new Error('secret /path/x')],
    ['a TypeError', new TypeError('secret /path/x is not a function')],
    ['a string', 'secret /path/x'],
    ['an object', { message: 'secret /path/x' }],
    ['undefined', undefined],
  ] as const) {
    it(`turns ${label} into a generic INTERNAL`, () => {
      const err = toServiceError(thrown);
      assert.equal(err.code, 'INTERNAL');
      assert.equal(err.status, 500);
      assert.ok(err.message.length > 0);
      assert.ok(!err.message.includes('secret'), err.message);
      assert.ok(!err.message.includes('/path'), err.message);
      assert.deepEqual(err.details, {});
    });
  }
});

describe('errorEnvelope', () => {
  it('has the section 2 shape', () => {
    const err = new ServiceError('MODEL_ENDPOINT_NOT_SUPPORTED', 'That model does not do embeddings.', {
      param: 'model',
      details: { family: 'embeddings' },
      headers: { 'retry-after': '1' },
    });
    const envelope = errorEnvelope(err, 'req_01TEST');
    assert.deepEqual(envelope, {
      type: 'error',
      request_id: 'req_01TEST',
      error: {
        code: 'MODEL_ENDPOINT_NOT_SUPPORTED',
        message: 'That model does not do embeddings.',
        type: 'invalid_request_error',
        param: 'model',
        messageKey: 'errors.model_endpoint_not_supported',
        details: { family: 'embeddings' },
      },
    });
  });

  it('serialises param as null and details as {} when absent', () => {
    const parsed = JSON.parse(JSON.stringify(errorEnvelope(new ServiceError('UNAUTHORIZED', 'No token.'), 'req_X')));
    assert.equal(parsed.error.param, null);
    assert.deepEqual(parsed.error.details, {});
    assert.equal(parsed.error.type, 'authentication_error');
  });

  it('builds an envelope for every code', () => {
    for (const code of ERROR_CODES as ErrorCode[]) {
      const env = errorEnvelope(new ServiceError(code, 'm'), 'req_1');
      assert.equal(env.error.code, code);
      assert.equal(env.error.type, ERROR_TABLE[code].type);
      assert.equal(env.error.messageKey, messageKeyOf(code));
    }
  });
});
