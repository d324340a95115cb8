import type { ErrorPayload } from './errors.ts';
import type { GaugeFailureCode } from './gauge.ts';

// Messages between the edge and the gauge worker. Requests that expect an answer carry a correlation `id`;
// errors cross as {code, message, details}. Credentials never travel here: the worker reads the vault itself.

/** One source's result of a refresh, as shown to clients: a code and a redacted message, never a cause's text. */
export interface GaugeRefreshOutcome {
  sourceId: string;
  ok: boolean;
  code: GaugeFailureCode | null;
  message: string | null;
  readings: number;
  /** When this collection finished (ISO). */
  finishedAt: string;
  /** The provider asked for a pause this long (the scheduler honours it). */
  retryAfterMs: number | null;
}

/** What the worker keeps per source for GET /v1/gauge/diagnostics (and the scheduler). */
export interface GaugeSourceState {
  /** 'ok' or the last failure code; null before the first run. */
  lastOutcome: 'ok' | GaugeFailureCode | null;
  lastRunAt: number | null;
  lastSuccessAt: number | null;
  lastFailureAt: number | null;
  consecutiveFailures: number;
  nextRunAt: number | null;
  /** Milliseconds the provider asked us to wait, as of lastRunAt. */
  retryAfterMs: number | null;
}

/** Rate-limit fields seen on one relayed answer, already reduced to the names Gauge reads. */
export interface GaugeHeaderObservation {
  /** The provider record's ID ([a-z0-9-], at most 63): the live-headers account is derived from it. */
  providerRecordId: string;
  /** Gauge's provider ID (openai, anthropic, openrouter). */
  providerId: string;
  at: number;
  /** Lower-cased header name -> value, only allow-listed rate-limit headers, values at most 64 characters. */
  fields: Record<string, string>;
}

export type GaugeRequest =
  | { kind: 'gauge.configure'; enabled: boolean; retentionDays: number }
  /** Sources changed in LMDB: reread them. */
  | { kind: 'gauge.setup' }
  | { kind: 'gauge.refresh'; id: number; sourceIds: string[] }
  /** Cheap, posted at most every few seconds: gateway calls since the last one, and rate-limit headers seen. */
  | { kind: 'gauge.traffic'; calls: number; headers: GaugeHeaderObservation[] }
  | { kind: 'gauge.prune'; id: number }
  | { kind: 'gauge.close'; id: number };

export type GaugeReply =
  | { kind: 'gauge.refreshed'; id: number; outcomes: GaugeRefreshOutcome[] }
  | { kind: 'gauge.pruned'; id: number; removed: number }
  | { kind: 'gauge.closed'; id: number }
  | { kind: 'gauge.failed'; id: number; error: ErrorPayload }
  /** Unasked: scheduled collections ended (the edge evaluates alerts on new readings at once). */
  | { kind: 'gauge.collected'; sourceIds: string[] };

export interface GaugeWorkerData {
  dataDir: string;
  poolSize: number;
  timeoutMs: number;
  baseIntervalMs: number;
  activeIntervalMs: number;
  /** Hosts a source may reach: 'any', or 'loopback' (tests: nothing but 127.0.0.1/::1/localhost). */
  allowedHosts: 'any' | 'loopback';
}
