import { KINDS, PROVIDER_KINDS, type ProviderKind } from '../../../protocol/providers.ts';
import type { ProviderTarget } from './types.ts';

// Building blocks every kind's request uses: the URL below the record's baseUrl and the header set.

/**
 * `baseUrl` already carries the API prefix (`/v1`, `/api/v1`) for the kinds whose SDKs expect it, so the path
 * is appended as text: `new URL(path, base)` would drop that prefix.
 */
export function joinUrl(baseUrl: string, path: string, query?: Readonly<Record<string, string>>): string {
  const url = baseUrl.replace(/\/+$/, '') + path;
  if (query === undefined) return url;
  const search = new URLSearchParams(query).toString();
  return search === '' ? url : `${url}?${search}`;
}

export function bearerAuth(credential: string | null): Record<string, string> {
  return credential === null ? {} : { authorization: `Bearer ${credential}` };
}

// Lower-cased hint name -> canonical spelling, per kind, built once.
const ALLOWED_HINTS = new Map<ProviderKind, ReadonlyMap<string, string>>(
  PROVIDER_KINDS.map((kind) => {
    const hints: readonly string[] = KINDS[kind].hints;
    return [kind, new Map(hints.map((name) => [name.toLowerCase(), name]))];
  }),
);
const NONE: ReadonlyMap<string, string> = new Map();

/**
 * Hints first, auth last. Records are validated against the kind's allow-list when written; the list is
 * applied again here so that no stored or forwarded hint can replace the credential headers or reach a
 * provider that never asked for it.
 */
export function requestHeaders(target: ProviderTarget, auth: Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const allowed = ALLOWED_HINTS.get(target.kind) ?? NONE;
  for (const name in target.hints) {
    const canonical = allowed.get(name.toLowerCase());
    if (canonical !== undefined) headers[canonical] = target.hints[name]!;
  }
  for (const name in auth) headers[name] = auth[name]!;
  return headers;
}
