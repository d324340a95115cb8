import { isAbsolute } from 'node:path';
import { ServiceError } from '../../protocol/errors.ts';
import { GAUGE_CONFIG_KEYS, type GaugeSourceConfig } from '../../protocol/gauge-catalog.ts';
import type { GaugeConfigPatch } from '../../protocol/http/gauge.ts';
import type { GaugeSourceRecord } from '../../store/gauge-source-repo.ts';
import { checkId, TAKES_CREDENTIAL, takesCredential } from '../../protocol/gauge-sources.ts';

// Checks on Gauge writes beyond the schema: which configuration keys a source takes, what a base URL and a log
// path may be, which sources take a credential, and the length of path IDs.

const bad = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

export { checkId, takesCredential };

/**
 * A collector's or authorization server's base: absolute http(s), no user info, query or fragment; trailing `/`
 * dropped.
 */
export function checkBaseUrl(value: string, param: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad(param, '`baseUrl` must be an absolute http or https URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw bad(param, '`baseUrl` must be an absolute http or https URL.');
  if (url.username !== '' || url.password !== '') throw bad(param, '`baseUrl` must not carry credentials.');
  if (url.search !== '' || url.hash !== '') throw bad(param, '`baseUrl` must not have a query or fragment.');
  return url.href.replace(/\/+$/, '');
}

/** The source's configuration after `patch`: allow-listed keys only, null returns a key to its default. */
export function mergeConfig(
  source: Pick<GaugeSourceRecord, 'collectorId'>,
  current: GaugeSourceConfig,
  patch: GaugeConfigPatch | undefined,
  defaults: GaugeSourceConfig,
): GaugeSourceConfig {
  if (patch === undefined) return current;
  const allowed: readonly string[] = source.collectorId === null ? [] : GAUGE_CONFIG_KEYS[source.collectorId];
  const next: GaugeSourceConfig = { ...current };
  for (const key of Object.keys(patch) as (keyof GaugeConfigPatch)[]) {
    if (!allowed.includes(key)) throw bad(`config.${key}`, `This source does not take \`config.${key}\`.`);
  }
  if (patch.baseUrl !== undefined) {
    if (patch.baseUrl === null) {
      if (defaults.baseUrl === undefined) delete next.baseUrl;
      else next.baseUrl = defaults.baseUrl;
    } else next.baseUrl = checkBaseUrl(patch.baseUrl, 'config.baseUrl');
  }
  if (patch.paths !== undefined) {
    if (patch.paths === null) delete next.paths;
    else {
      patch.paths.forEach((p, i) => {
        if (!isAbsolute(p) || p.includes('\u0000'))
          throw bad(`config.paths[${i}]`, 'Each log path must be an absolute path.');
      });
      next.paths = [...new Set(patch.paths)];
    }
  }
  return next;
}

export function checkCredentialAllowed(
  source: Pick<GaugeSourceRecord, 'authMode'>,
  credential: string | null | undefined,
): void {
  if (credential === undefined || TAKES_CREDENTIAL.has(source.authMode)) return;
  throw bad('credential', 'This source reads no credential.');
}
