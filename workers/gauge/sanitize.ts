import type { GaugeActivityBucket, GaugeProviderStatus, GaugeReading, GaugeWindow } from '../../protocol/gauge.ts';
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { GAUGE_LIMITS } from '../../protocol/gauge-catalog.ts';
import { redactText } from '../../protocol/gauge-redact.ts';

// The actor's checks on what a collector hands back, before anything is stored: readings belong to the account
// being collected, counts are finite numbers, every string is bounded and redacted, lists are capped. A
// collector's bug can lose data here, never leak it or grow the store without bound.

const MAX_READINGS = 50;
const MAX_WINDOWS = 32;
const MAX_STATUS_ITEMS = 100;
const MAX_BUCKETS = 5_000;

const KINDS = new Set(['requests', 'tokens', 'input_tokens', 'output_tokens', 'utilization', 'credits', 'spend']);
const SOURCES = new Set(['polled', 'live_headers', 'local_logs', 'estimate']);
const CONFIDENCE = new Set(['high', 'medium', 'low']);
const INDICATORS = new Set(['none', 'minor', 'major', 'critical', 'maintenance', 'unknown']);
const oneOf = <T extends string>(set: Set<string>, v: unknown, fallback: T): T =>
  typeof v === 'string' && set.has(v) ? (v as T) : fallback;

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown, max: number): string | null =>
  typeof v === 'string' && v.length > 0 ? redactText(v, max) : null;
const iso = (v: unknown): string | null =>
  typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? new Date(Date.parse(v)).toISOString() : null;

function window(w: GaugeWindow): GaugeWindow {
  const utilization = num(w.utilization);
  return {
    id: str(w.id, 64) ?? 'window',
    kind: w.kind,
    period: str(w.period, 16),
    used: num(w.used),
    limit: num(w.limit),
    remaining: num(w.remaining),
    utilization: utilization === null ? null : Math.min(1, Math.max(0, utilization)),
    resetsAt: iso(w.resetsAt),
  };
}

/** `accountId` and `providerId` are the source's, whatever the collector wrote. */
export function sanitizeReadings(
  readings: readonly GaugeReading[],
  accountId: string,
  providerId: string,
  now: Date,
): GaugeReading[] {
  return readings
    .filter((r) => r !== null && typeof r === 'object')
    .slice(0, MAX_READINGS)
    .map((r) => ({
      accountId,
      providerId,
      collectedAt: iso(r.collectedAt) ?? now.toISOString(),
      source: oneOf(SOURCES, r.source, 'polled'),
      confidence: oneOf(CONFIDENCE, r.confidence, 'low'),
      windows: (Array.isArray(r.windows) ? r.windows : [])
        .filter((w) => w !== null && typeof w === 'object' && KINDS.has(w.kind))
        .slice(0, MAX_WINDOWS)
        .map(window),
      spend: r.spend
        ? {
            providerReported: num(r.spend.providerReported),
            estimated: num(r.spend.estimated),
            currency: str(r.spend.currency, 8) ?? 'USD',
            periodStart: iso(r.spend.periodStart),
            periodEnd: iso(r.spend.periodEnd),
          }
        : null,
      credits: r.credits
        ? { remaining: num(r.credits.remaining), total: num(r.credits.total), currency: str(r.credits.currency, 8) }
        : null,
    }));
}

export function sanitizeStatus(s: GaugeProviderStatus, providerId: string, now: Date): GaugeProviderStatus {
  return {
    providerId,
    indicator: oneOf(INDICATORS, s.indicator, 'unknown'),
    description: str(s.description, 200),
    components: (Array.isArray(s.components) ? s.components : [])
      .slice(0, MAX_STATUS_ITEMS)
      .map((c) => ({ name: str(c.name, 200) ?? '', status: str(c.status, 40) ?? 'unknown' })),
    incidents: (Array.isArray(s.incidents) ? s.incidents : []).slice(0, MAX_STATUS_ITEMS).map((i) => ({
      name: str(i.name, 200) ?? '',
      status: str(i.status, 40) ?? 'unknown',
      impact: str(i.impact, 40) ?? 'unknown',
      updatedAt: iso(i.updatedAt),
    })),
    observedAt: iso(s.observedAt) ?? now.toISOString(),
  };
}

// The local-log collectors already reduce a working directory to a project name and a hashed workspace; a path
// that reaches here anyway (a collector's bug) would name a person's home, so it is reduced the same way.
const PATH = /[\\/]/;
const placeLabel = (v: string | null, kind: 'project' | 'workspace'): string | null => {
  if (v === null || !PATH.test(v)) return v;
  if (kind === 'workspace') return `w-${createHash('sha256').update(v).digest('base64url').slice(0, 10)}`;
  const trimmed = v.replace(/[\\/]+$/, '');
  // A home directory's last segment is usually the user name.
  if (trimmed === homedir().replace(/[\\/]+$/, '')) return '~';
  return trimmed.split(PATH).pop() || null;
};

export function sanitizeActivity(
  buckets: readonly GaugeActivityBucket[],
  sourceId: string,
  providerId: string,
): GaugeActivityBucket[] {
  const count = (v: unknown) => Math.max(0, num(v) ?? 0);
  return buckets.slice(0, MAX_BUCKETS).flatMap((b) => {
    const hour = iso(b.hour);
    if (hour === null) return [];
    return [
      {
        hour: new Date(Math.floor(Date.parse(hour) / 3_600_000) * 3_600_000).toISOString(),
        sourceId,
        providerId,
        model: str(b.model, GAUGE_LIMITS.filterMax),
        project: placeLabel(str(b.project, GAUGE_LIMITS.filterMax), 'project'),
        workspace: placeLabel(str(b.workspace, GAUGE_LIMITS.filterMax), 'workspace'),
        session: str(b.session, GAUGE_LIMITS.filterMax),
        requests: count(b.requests),
        inputTokens: count(b.inputTokens),
        outputTokens: count(b.outputTokens),
        cacheReadTokens: count(b.cacheReadTokens),
        cacheWriteTokens: count(b.cacheWriteTokens),
        reasoningTokens: count(b.reasoningTokens),
      },
    ];
  });
}
