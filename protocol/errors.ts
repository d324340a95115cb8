import { redactDetails, redactSecrets } from './redact.ts';

// The complete error-code table (docs/api.md, Error codes). One row per code; never reuse a code.
// `type` uses the error types both styleA and styleB clients already understand, so SDKs classify our
// envelope the way they classify their provider's own errors.

export const ERROR_TABLE = {
  INVALID_JSON: { status: 400, type: 'invalid_request_error' },
  INVALID_REQUEST: { status: 400, type: 'invalid_request_error' },
  UNAUTHORIZED: { status: 401, type: 'authentication_error' },
  FORBIDDEN: { status: 403, type: 'permission_error' },
  NOT_FOUND: { status: 404, type: 'not_found_error' },
  MODEL_NOT_FOUND: { status: 404, type: 'not_found_error' },
  METHOD_NOT_ALLOWED: { status: 405, type: 'invalid_request_error' },
  CONFLICT: { status: 409, type: 'invalid_request_error' },
  GAUGE_DISABLED: { status: 409, type: 'invalid_request_error' },
  PAYLOAD_TOO_LARGE: { status: 413, type: 'request_too_large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, type: 'invalid_request_error' },
  MODEL_ENDPOINT_NOT_SUPPORTED: { status: 400, type: 'invalid_request_error' },
  PROVIDER_DISABLED: { status: 409, type: 'invalid_request_error' },
  PROVIDER_CREDENTIAL_MISSING: { status: 409, type: 'invalid_request_error' },
  UPSTREAM_AUTH_FAILED: { status: 502, type: 'api_error' },
  UPSTREAM_RATE_LIMITED: { status: 429, type: 'rate_limit_error' },
  UPSTREAM_ERROR: { status: 502, type: 'api_error' },
  UPSTREAM_UNREACHABLE: { status: 502, type: 'api_error' },
  UPSTREAM_TIMEOUT: { status: 504, type: 'timeout_error' },
  LIMIT_EXCEEDED: { status: 429, type: 'rate_limit_error' },
  SESSION_PAUSED: { status: 429, type: 'rate_limit_error' },
  OVERLOADED: { status: 503, type: 'overloaded_error' },
  MODEL_MEMORY_BUSY: { status: 503, type: 'overloaded_error' },
  MODEL_TOO_LARGE: { status: 400, type: 'invalid_request_error' },
  INTERNAL: { status: 500, type: 'api_error' },
} as const satisfies Record<string, { status: number; type: string }>;

export type ErrorCode = keyof typeof ERROR_TABLE;

export const ERROR_CODES = Object.keys(ERROR_TABLE) as ErrorCode[];

export function statusOf(code: ErrorCode): number {
  return ERROR_TABLE[code].status;
}

export function messageKeyOf(code: ErrorCode): string {
  return `errors.${code.toLowerCase()}`;
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_TABLE, value);
}

/** What crosses a thread boundary: `instanceof` does not survive it, these three fields do. */
export interface ErrorPayload {
  code: ErrorCode;
  message: string;
  param?: string | null;
  details?: Record<string, unknown>;
  /** Response headers the error implies (Retry-After); never secrets. */
  headers?: Record<string, string>;
  /** Only where the table's status is not the answer: an upstream 4xx keeps its own status. */
  status?: number;
}

export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly param: string | null;
  readonly details: Record<string, unknown>;
  /** Extra response headers (Allow, Retry-After); never secrets. */
  readonly headers: Record<string, string>;
  private readonly statusOverride: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: {
      param?: string | null;
      details?: Record<string, unknown>;
      headers?: Record<string, string>;
      status?: number;
    } = {},
  ) {
    super(message);
    this.name = 'ServiceError';
    this.code = code;
    this.param = options.param ?? null;
    this.details = options.details ?? {};
    this.headers = options.headers ?? {};
    this.statusOverride = options.status;
  }

  get status(): number {
    return this.statusOverride ?? statusOf(this.code);
  }

  toPayload(): ErrorPayload {
    const payload: ErrorPayload = {
      code: this.code,
      message: this.message,
      param: this.param,
      details: this.details,
      headers: this.headers,
    };
    if (this.statusOverride !== undefined) payload.status = this.statusOverride;
    return payload;
  }

  static fromPayload(payload: ErrorPayload): ServiceError {
    return new ServiceError(payload.code, payload.message, {
      param: payload.param ?? null,
      details: payload.details ?? {},
      headers: payload.headers ?? {},
      ...(payload.status !== undefined && { status: payload.status }),
    });
  }
}

const GENERIC_INTERNAL = 'The service hit an internal error. Quote the request ID when reporting it.';

/** The one place an unknown throw becomes INTERNAL: nothing of the original message leaves the service. */
/**
 * The client disconnected before its answer: nothing is sent, and it is not a fault of the service. The
 * request log records status 499 (nginx's "client closed request") instead of an internal error.
 */
export class ClientClosed extends Error {
  constructor() {
    super('the client closed the connection');
  }
}

export function toServiceError(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  return new ServiceError('INTERNAL', GENERIC_INTERNAL);
}

export interface ErrorEnvelope {
  type: 'error';
  request_id: string;
  error: {
    code: ErrorCode;
    message: string;
    type: string;
    param: string | null;
    messageKey: string;
    details: Record<string, unknown>;
  };
}

/**
 * The one serializer of the error envelope (docs/api.md, Conventions). Messages and params can echo client
 * input, so secret-shaped text is redacted here, once, for every error.
 */
export function errorEnvelope(err: ServiceError, requestId: string): ErrorEnvelope {
  return {
    type: 'error',
    request_id: requestId,
    error: {
      code: err.code,
      message: redactSecrets(err.message),
      type: ERROR_TABLE[err.code].type,
      param: err.param === null ? null : redactSecrets(err.param),
      messageKey: messageKeyOf(err.code),
      details: redactDetails(err.details),
    },
  };
}

/**
 * An error as it crosses a MessagePort: port calls (workers/shared/port-channel.ts) and forwarded requests
 * (edge/http/forward-serve.ts).
 */
export type WireError = { error: ErrorPayload } | { failure: { name: string; message: string } };

/**
 * What an error becomes on the wire: a ServiceError whole, a client gone (ClientClosed) by that name, anything
 * else its name and message.
 */
export function errorToWire(err: unknown): WireError {
  if (err instanceof ServiceError) return { error: err.toPayload() };
  const e = err instanceof Error ? err : new Error(String(err));
  return { failure: { name: e instanceof ClientClosed ? 'ClientClosed' : e.name, message: e.message } };
}

/** The error `errorToWire` sent, as it was thrown on the other side (a ServiceError or ClientClosed as such). */
export function errorFromWire(wire: WireError): Error {
  if ('error' in wire) return ServiceError.fromPayload(wire.error);
  if (wire.failure.name === 'ClientClosed') return new ClientClosed();
  return Object.assign(new Error(wire.failure.message), { name: wire.failure.name });
}
