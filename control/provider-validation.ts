import { ServiceError } from '../protocol/errors.ts';
import { KINDS, type ProviderKind } from '../protocol/providers.ts';
import { reachesOwnListener } from './own-listener.ts';
import { withArticle } from '../protocol/words.ts';

// Checks of provider fields that a schema cannot express: they depend on the kind.

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

/** `https://host:port/path` without credentials, query or fragment; trailing slashes dropped. */
export function checkBaseUrl(kind: ProviderKind, value: string | null | undefined): string | null {
  const fallback = KINDS[kind].defaultBaseUrl;
  if (kind === 'embedded') {
    if (value !== undefined && value !== null)
      throw invalid('baseUrl', 'The embedded runtime runs inside the service and takes no baseUrl.');
    return null;
  }
  if (value === undefined || value === null) {
    if (fallback === null) throw invalid('baseUrl', `${withArticle(kind, true)} provider needs a baseUrl.`);
    return fallback;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid('baseUrl', '`baseUrl` must be an absolute http(s) URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalid('baseUrl', '`baseUrl` must use http or https.');
  // Credentials belong in `credential` (the vault), never in a field that is shown back.
  if (url.username !== '' || url.password !== '')
    throw invalid('baseUrl', '`baseUrl` must not hold a user name or password.');
  if (url.search !== '' || url.hash !== '') throw invalid('baseUrl', '`baseUrl` must not have a query or fragment.');
  return url.toString().replace(/\/+$/, '');
}

/** Refuses a baseUrl that reaches this service's own listener (`port`, null before it listens). */
export function checkNotOwnListener(baseUrl: string | null, port: number | null): void {
  if (baseUrl === null || port === null || !reachesOwnListener(baseUrl, port)) return;
  throw invalid(
    'baseUrl',
    `\`baseUrl\` reaches this service's own listener (port ${port}): a provider there would list the catalog into ` +
      `itself.`,
  );
}

const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Keeps only the kind's allow-listed hint headers, in their canonical spelling. */
export function checkHints(kind: ProviderKind, hints: Record<string, string> | undefined): Record<string, string> {
  const allowed = KINDS[kind].hints;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(hints ?? {})) {
    const canonical = allowed.find((h) => h.toLowerCase() === name.toLowerCase());
    if (canonical === undefined) {
      const list = allowed.length > 0 ? allowed.join(', ') : 'none';
      throw invalid(
        `hints.${name.slice(0, 100)}`,
        `\`${name.slice(0, 100)}\` is not an allowed hint header for ${kind} (allowed: ${list}).`,
      );
    }
    if (!HEADER_VALUE.test(value))
      throw invalid(`hints.${canonical}`, 'Hint values must be single-line header values.');
    out[canonical] = value;
  }
  return out;
}

export function checkCredential(kind: ProviderKind, credential: string | null | undefined): void {
  if (credential === undefined || credential === null) return;
  if (KINDS[kind].credential === 'none')
    throw invalid('credential', `${withArticle(kind, true)} provider takes no credential.`);
  // Never echo the value: the message names the rule only.
  if (!/^[\x21-\x7e]+$/.test(credential))
    throw invalid('credential', 'A credential must be printable ASCII without spaces.');
}

export function defaultProviderId(kind: ProviderKind): string {
  return kind.replace(/_/g, '-');
}
