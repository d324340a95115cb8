// CORS (docs/api.md). Off by default; an allowed origin's preflight needs no token, its
// real requests still do. Header strings are built once per configuration, not per request.

import { normalizeOrigin } from '../../protocol/origin.ts';

export { normalizeOrigin };

const ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';
const EXPOSE_HEADERS = [
  'x-service-request-id',
  'x-request-id',
  'request-id',
  'retry-after',
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-tokens',
  // How a token count was made (provider, tokenizer or estimate): docs/api.md, Token counting.
  'x-service-token-count',
  // The tools a translated Responses call left out: docs/api.md, Tools of a Responses request.
  'switchyard-omitted-tools',
].join(', ');
const HEADER_LIST = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(?:\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$/;

export interface CorsPolicy {
  readonly origins: readonly string[];
  readonly wildcard: boolean;
  allows(origin: string | undefined): origin is string;
  /** Headers for a real (non-preflight) response to an allowed origin. */
  responseHeaders(origin: string): Record<string, string>;
  preflightHeaders(origin: string, requestedHeaders: string | undefined): Record<string, string>;
}

export function corsPolicy(allowedOrigins: readonly string[]): CorsPolicy {
  const origins = allowedOrigins.map((o) => normalizeOrigin(o)).filter((o): o is string => o !== null);
  const set = new Set(origins);
  const wildcard = set.has('*');
  return {
    origins,
    wildcard,
    allows(origin): origin is string {
      if (origin === undefined || origin === '') return false;
      if (wildcard) return true;
      const normalized = normalizeOrigin(origin);
      return normalized !== null && set.has(normalized);
    },
    responseHeaders(origin) {
      return { 'access-control-allow-origin': origin, vary: 'Origin', 'access-control-expose-headers': EXPOSE_HEADERS };
    },
    preflightHeaders(origin, requestedHeaders) {
      const headers: Record<string, string> = {
        'access-control-allow-origin': origin,
        vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
        'access-control-allow-methods': ALLOW_METHODS,
        'access-control-max-age': '600',
      };
      if (requestedHeaders !== undefined && HEADER_LIST.test(requestedHeaders.trim())) {
        headers['access-control-allow-headers'] = requestedHeaders.trim();
      }
      return headers;
    },
  };
}
