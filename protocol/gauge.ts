// Gauge's records as docs/api.md names them. Pure types and constants: no I/O.
// Everything here is already redacted: no credential, credential reference, email or provider-side ID.

export const GAUGE_AUTH_MODES = [
  'admin_key',
  'api_key',
  'oauth_device',
  'browser_assisted',
  'local_logs',
  'none',
] as const;
export type GaugeAuthMode = (typeof GAUGE_AUTH_MODES)[number];

export const GAUGE_CAPABILITIES = ['quota', 'spend', 'credits', 'activity', 'status', 'rate_limits'] as const;
export type GaugeCapability = (typeof GAUGE_CAPABILITIES)[number];

export type GaugeReadingSource = 'polled' | 'live_headers' | 'local_logs' | 'estimate';
export type GaugeConfidence = 'high' | 'medium' | 'low';
export type GaugeWindowKind =
  | 'requests'
  | 'tokens'
  | 'input_tokens'
  | 'output_tokens'
  | 'utilization'
  | 'credits'
  | 'spend';

/** One quota window. Absent figures are null, never guessed. `resetsAt` is an ISO date-time or null. */
export interface GaugeWindow {
  id: string;
  kind: GaugeWindowKind;
  /** e.g. "1m", "5h", "7d", "month"; null when the provider does not say. */
  period: string | null;
  used: number | null;
  limit: number | null;
  remaining: number | null;
  /** 0..1 share used, when known or computable. */
  utilization: number | null;
  resetsAt: string | null;
}

export interface GaugeSpend {
  /** What the provider reported for the period, in `currency`; null when it reports none. */
  providerReported: number | null;
  /** Metered tokens times catalog pricing; null when not computed by this source. */
  estimated: number | null;
  currency: string;
  periodStart: string | null;
  periodEnd: string | null;
}

export interface GaugeCredits {
  remaining: number | null;
  total: number | null;
  currency: string | null;
}

export interface GaugeReading {
  accountId: string;
  providerId: string;
  collectedAt: string;
  source: GaugeReadingSource;
  confidence: GaugeConfidence;
  windows: GaugeWindow[];
  spend: GaugeSpend | null;
  credits: GaugeCredits | null;
}

/** Per provider, from its public status page; an unreadable feed is `unknown`, never an outage. */
export type GaugeIndicator = 'none' | 'minor' | 'major' | 'critical' | 'maintenance' | 'unknown';
export interface GaugeProviderStatus {
  providerId: string;
  indicator: GaugeIndicator;
  description: string | null;
  components: { name: string; status: string }[];
  incidents: { name: string; status: string; impact: string; updatedAt: string | null }[];
  observedAt: string;
}

/**
 * Token counts for one hour of one agent session, from local logs or the service's own usage (W2.2's activity
 * reads these). Labels (project, workspace) are redacted before they get here.
 */
export interface GaugeActivityBucket {
  hour: string;
  sourceId: string;
  providerId: string;
  model: string | null;
  project: string | null;
  workspace: string | null;
  session: string | null;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
}

/** Why a collection failed, as it may be shown: a code and a redacted message, never a cause's text. */
export type GaugeFailureCode =
  | 'auth_failed'
  | 'rate_limited'
  | 'upstream_error'
  | 'malformed'
  | 'timeout'
  | 'unreachable'
  | 'not_configured'
  | 'read_failed';
