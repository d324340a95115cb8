// What crosses the proxy in each direction (docs/api.md, Conventions). Both directions are
// allow-lists: a header nobody thought about stays behind.

/** Client request headers that may go upstream as they are (hints are added per kind by the adapter). */
const REQUEST_PASS = new Set([
  'content-type',
  'accept',
  'accept-language',
  'anthropic-version',
  'openai-beta',
  'idempotency-key',
]);

/**
 * The client headers to forward: protocol headers from REQUEST_PASS plus the kind's allow-listed hints.
 * Authorization, x-api-key, X-Service-Token, cookies, proxy and forwarding headers never pass.
 */
export function forwardRequestHeaders(
  client: Readonly<Record<string, string>>,
  allowedHints: ReadonlyMap<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in client) {
    const value = client[name]!;
    if (REQUEST_PASS.has(name)) out[name] = value;
    else {
      const hint = allowedHints.get(name);
      if (hint !== undefined) out[hint] = value;
    }
  }
  return out;
}

/** Upstream response headers a client may see. Hop-by-hop, credential-bearing and CORS headers are not here. */
const RESPONSE_PASS = new Set([
  'content-type',
  'content-disposition',
  'content-language',
  'cache-control',
  'retry-after',
  'retry-after-ms',
  'openai-processing-ms',
  'openai-version',
  'x-openrouter-generation-id',
]);
const RESPONSE_PASS_PREFIXES = ['x-ratelimit-', 'anthropic-ratelimit-', 'ratelimit-'];
/** The upstream's own request ID travels under this name; ours owns the three request-ID headers. */
const UPSTREAM_ID_HEADERS = new Set(['x-request-id', 'request-id']);

export function filterResponseHeaders(
  upstream: Readonly<Record<string, string | string[] | undefined>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  // for...in and a plain loop: this runs for every answer, and entries() and a closure per header allocate.
  for (const rawName in upstream) {
    const value = upstream[rawName];
    if (value === undefined) continue;
    const name = rawName.toLowerCase();
    const text = Array.isArray(value) ? value.join(', ') : value;
    if (RESPONSE_PASS.has(name) || hasPassPrefix(name)) out[name] = text;
    else if (UPSTREAM_ID_HEADERS.has(name)) out['upstream-request-id'] = text;
  }
  return out;
}

function hasPassPrefix(name: string): boolean {
  for (const prefix of RESPONSE_PASS_PREFIXES) if (name.startsWith(prefix)) return true;
  return false;
}
