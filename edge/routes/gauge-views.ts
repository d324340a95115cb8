import type { GaugeReading } from '../../protocol/gauge.ts';
import { accountRef } from '../../protocol/gauge-redact.ts';
import {
  GAUGE_HISTORY_MAX,
  type GaugeAccountSummary,
  type GaugeDiagnostic,
  type GaugeHistoryPoint,
  type GaugeSourceSummary,
} from '../../protocol/http/gauge.ts';
import type { GaugeDataRepo } from '../../store/gauge-data-repo.ts';
import type { GaugeSourceRecord } from '../../store/gauge-source-repo.ts';
import { takesCredential } from '../../protocol/gauge-sources.ts';

// What Gauge's read routes show, projected from the store: never a credential or its reference, never a
// provider-side identity; diagnostics name accounts by a hash.

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

export function sourceSummary(r: GaugeSourceRecord): GaugeSourceSummary {
  return {
    id: r.id,
    kind: r.kind,
    providerId: r.providerId,
    authMode: r.authMode,
    label: r.label,
    enabled: r.enabled,
    builtIn: r.builtIn,
    credentialConfigured: r.credentialRef !== null,
    config: structuredClone(r.config),
    createdAt: new Date(r.createdAt).toISOString(),
    updatedAt: new Date(r.updatedAt).toISOString(),
  };
}

/** Sources that are identities at a provider; status pages and the live-header tap are not. */

export function accountSummary(r: GaugeSourceRecord, data: GaugeDataRepo): GaugeAccountSummary {
  const stored = data.state(r.id)?.state;
  const last = stored?.lastOutcome ?? null;
  const auth = !takesCredential(r)
    ? 'not_required'
    : r.credentialRef === null
      ? 'missing'
      : last === 'auth_failed'
        ? 'failed'
        : 'configured';
  const collection = !r.enabled ? 'disabled' : last === null ? 'never' : last === 'ok' ? 'ok' : 'failing';
  return {
    id: r.id,
    providerId: r.providerId!,
    authMode: r.authMode,
    label: r.label,
    enabled: r.enabled,
    builtIn: r.builtIn,
    credentialConfigured: r.credentialRef !== null,
    status: { auth, collection },
    lastReadingAt: data.reading(r.id)?.reading.collectedAt ?? null,
  };
}

export function diagnostic(r: GaugeSourceRecord, data: GaugeDataRepo): GaugeDiagnostic {
  const s = data.state(r.id)?.state;
  return {
    sourceId: r.id,
    kind: r.kind,
    providerId: r.providerId,
    accountRef: accountRef(r.id),
    enabled: r.enabled,
    lastOutcome: s?.lastOutcome ?? null,
    lastRunAt: iso(s?.lastRunAt),
    lastSuccessAt: iso(s?.lastSuccessAt),
    lastFailureAt: iso(s?.lastFailureAt),
    consecutiveFailures: s?.consecutiveFailures ?? 0,
    // The live-header tap is never polled: it has no next run.
    nextRunAt: r.enabled && r.kind !== 'live_headers' ? iso(s?.nextRunAt) : null,
  };
}

export interface ReadingFilter {
  providerId?: string;
  accountId?: string;
  after?: number;
  before?: number;
}

/** Latest reading per matching account, newest first; `after` inclusive, `before` exclusive. */
export function latestReadings(data: GaugeDataRepo, f: ReadingFilter): GaugeReading[] {
  return data
    .readings()
    .map((s) => s.reading)
    .filter((r) => {
      const at = Date.parse(r.collectedAt);
      return (
        (f.providerId === undefined || r.providerId === f.providerId) &&
        (f.accountId === undefined || r.accountId === f.accountId) &&
        (f.after === undefined || at >= f.after) &&
        (f.before === undefined || at < f.before)
      );
    })
    .sort((a, b) => Date.parse(b.collectedAt) - Date.parse(a.collectedAt) || (a.accountId < b.accountId ? -1 : 1));
}

export function historySince(
  data: GaugeDataRepo,
  sinceMs: number,
  sourceIds: readonly string[],
): { points: GaugeHistoryPoint[]; truncated: boolean } {
  const points: GaugeHistoryPoint[] = [];
  for (const row of data.history(sinceMs, sourceIds)) {
    if (points.length === GAUGE_HISTORY_MAX) return { points, truncated: true };
    const r = row.reading;
    points.push({
      accountId: row.accountId,
      providerId: r.providerId,
      hour: row.hour,
      windows: r.windows,
      spend: r.spend,
      credits: r.credits,
    });
  }
  points.sort((a, b) => (a.hour < b.hour ? -1 : a.hour > b.hour ? 1 : a.accountId < b.accountId ? -1 : 1));
  return { points, truncated: false };
}
