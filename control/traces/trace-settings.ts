import { ServiceError } from '../../protocol/errors.ts';
import { type SettingsPatch, type StoredSettings, TRACE_HEADERS_MAX } from '../../protocol/http/settings.ts';

// The `traces` setting after a PATCH (docs/api.md, Settings): the endpoint checked, headers merged per name. The
// schema has bounded each header already; what it cannot say is checked here.

type TraceSettings = StoredSettings['traces'];
type TracesPatch = NonNullable<SettingsPatch['traces']>;

// The exporter writes these itself; one set here would fight it or break the request's framing.
const OWNED_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'host', 'connection']);
const OWNED_HEADER_PREFIXES = ['transfer-', 'proxy-', ':'];

const bad = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

export function mergeTraceSettings(current: TraceSettings, patch: TracesPatch | undefined): TraceSettings {
  if (patch === undefined) return current;
  const next: TraceSettings = { ...current, headers: { ...current.headers } };
  if (patch.enabled !== undefined) next.enabled = patch.enabled;
  if (patch.endpoint !== undefined) next.endpoint = patch.endpoint === null ? null : checkEndpoint(patch.endpoint);
  for (const [name, value] of Object.entries(patch.headers ?? {})) {
    if (OWNED_HEADERS.has(name) || OWNED_HEADER_PREFIXES.some((p) => name.startsWith(p)))
      throw bad(`traces.headers.${name}`, `\`${name}\` is set by the exporter itself.`);
    if (value === null) delete next.headers[name];
    else next.headers[name] = value;
  }
  if (Object.keys(next.headers).length > TRACE_HEADERS_MAX)
    throw bad('traces.headers', `At most ${TRACE_HEADERS_MAX} headers; remove one with null first.`);
  return next;
}

/**
 * An absolute http(s) URL, as the OTLP/HTTP traces path is named in full (`.../v1/traces`). No user info, query
 * or fragment: the endpoint is shown in GET /v1/settings, so a secret belongs in a header.
 */
function checkEndpoint(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad('traces.endpoint', '`traces.endpoint` must be an absolute http or https URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw bad('traces.endpoint', '`traces.endpoint` must be an absolute http or https URL.');
  if (url.username !== '' || url.password !== '')
    throw bad('traces.endpoint', '`traces.endpoint` must not carry credentials; put a key in `traces.headers`.');
  if (url.search !== '' || url.hash !== '')
    throw bad('traces.endpoint', '`traces.endpoint` must not have a query or fragment; put a key in `traces.headers`.');
  return url.href;
}

/** What GET /v1/settings shows: the header names, never their values. */
export function traceSettingsView(t: TraceSettings): {
  enabled: boolean;
  endpoint: string | null;
  headerNames: string[];
} {
  return { enabled: t.enabled, endpoint: t.endpoint, headerNames: Object.keys(t.headers).sort() };
}
