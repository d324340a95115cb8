import { ServiceError } from './errors.ts';
import { GAUGE_LIMITS, type GaugeBuiltInSource } from './gauge-catalog.ts';

// Gauge's sources and accounts as their readers see them (store/gauge-source-repo.ts keeps them,
// control/gauge changes them), with the checks and answers the routes and the control plane share.

/** A built-in source's fields (its `label` already redacted: email local parts removed), and the stored rest. */
export interface GaugeSourceRecord extends GaugeBuiltInSource {
  builtIn: boolean;
  /** Opaque vault reference; never leaves the store, the edge's memory and the gauge worker. */
  credentialRef: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface GaugeSettings {
  enabled: boolean;
  retentionDays: number;
}

/** Gauge's accounts: sources of a provider, not a status page or the live-header tap. */
export const isAccount = (r: Pick<GaugeSourceRecord, 'providerId' | 'kind'>) =>
  r.providerId !== null && r.kind !== 'status' && r.kind !== 'live_headers';

export const TAKES_CREDENTIAL: ReadonlySet<string> = new Set([
  'admin_key',
  'api_key',
  'oauth_device',
  'browser_assisted',
]);

export const takesCredential = (source: Pick<GaugeSourceRecord, 'authMode'>) => TAKES_CREDENTIAL.has(source.authMode);

/** Path parameters: the contract's 160 characters, checked before any lookup. */
export function checkId(id: string, param = 'id'): string {
  if (id.length === 0 || id.length > GAUGE_LIMITS.idMax)
    throw new ServiceError('INVALID_REQUEST', `\`${param}\` must be 1 to ${GAUGE_LIMITS.idMax} characters.`, { param });
  return id;
}

export const gaugeDisabled = () =>
  new ServiceError('GAUGE_DISABLED', 'Gauge is turned off; set `gauge.enabled` to true with PATCH /v1/settings first.');
