import { ServiceError } from '../../../protocol/errors.ts';
import type { GatewayOp } from '../../../protocol/gateway.ts';

// Which query parameters of a gateway call go upstream (docs/api.md, Gateway): those the provider APIs
// document for the operation, and nothing else. A parameter that is not listed is dropped, not refused, as
// clients add their own (a cache-buster, a tracing ID). Each forwarded name and value is decoded and encoded
// again, so the upstream gets exactly one spelling of it and never a raw byte the client chose.

/** Azure OpenAI and its compatibles select the API version of every styleA route with it. */
const API_VERSION = 'api-version';
/** OpenAI's SDKs send arrays as `include[]=a&include[]=b`; `include=a` is the same list of one. */
const INCLUDE = ['include', 'include[]'];

export const FORWARDED_QUERY = {
  'chat.completions': [API_VERSION],
  embeddings: [API_VERSION],
  'responses.create': [API_VERSION],
  'responses.input_tokens': [API_VERSION],
  'responses.compact': [API_VERSION],
  // GET /v1/responses/{id}: the stored response, or its events again (stream=true, from starting_after).
  'responses.get': [...INCLUDE, 'include_obfuscation', 'stream', 'starting_after', API_VERSION],
  'responses.delete': [API_VERSION],
  'responses.input_items': [...INCLUDE, 'after', 'before', 'limit', 'order', API_VERSION],
  'responses.cancel': [API_VERSION],
  'images.generations': [API_VERSION],
  'images.edits': [API_VERSION],
  'audio.speech': [API_VERSION],
  'audio.transcriptions': [API_VERSION],
  // Anthropic's SDKs (and so Claude Code) call the beta surface as `/v1/messages?beta=true`.
  messages: ['beta'],
  'messages.count_tokens': ['beta'],
  rerank: [],
} as const satisfies Record<GatewayOp, readonly string[]>;

const ALLOWED = new Map<GatewayOp, ReadonlySet<string>>(
  Object.entries(FORWARDED_QUERY).map(([op, names]) => [op as GatewayOp, new Set<string>(names)]),
);

// C0 controls (CR and LF among them), DEL and C1 controls, as a decoded name or value may hold them.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Form decoding (`+` is a space), as servers read a query; null for a malformed percent sequence. */
function decode(text: string): string | null {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    return null;
  }
}

/**
 * The query string to send upstream for `op`, from the client's raw query (without `?`): the listed
 * parameters in the client's order, repeated ones kept, each re-encoded; '' when none is left. A listed
 * parameter whose value is malformed or holds a control character is the client's mistake: 400.
 */
export function forwardedQuery(op: GatewayOp, raw: string): string {
  const allowed = ALLOWED.get(op)!;
  if (raw === '' || allowed.size === 0) return '';
  const out: string[] = [];
  for (const part of raw.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = decode(eq === -1 ? part : part.slice(0, eq));
    if (name === null || !allowed.has(name)) continue;
    const value = eq === -1 ? null : decode(part.slice(eq + 1));
    if ((eq !== -1 && value === null) || CONTROL.test(value ?? '')) {
      throw new ServiceError(
        'INVALID_REQUEST',
        `The query parameter ${name} must be percent-encoded text without control characters.`,
        { param: name },
      );
    }
    out.push(value === null ? encodeURIComponent(name) : `${encodeURIComponent(name)}=${encodeURIComponent(value)}`);
  }
  return out.join('&');
}
