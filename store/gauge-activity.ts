import type { GaugeActivityBucket } from '../protocol/gauge.ts';
import type { StoreEnv } from './env.ts';

// The activity query (GET /v1/gauge/activity) over the `gauge-activity` table gauge-data-repo.ts writes. Its
// keys start with the bucket's ISO hour (`<hour>\0<sourceId>\0<dims hash>`), and every stored hour has the same
// fixed-width form, so string order is time order: a range of hours is one key-range scan, walked backwards
// for newest-first pages, and a 366-day query reads only the buckets of those 366 days.

export const HOUR_MS = 3_600_000;

export interface ActivityFilter {
  sourceId?: string;
  accountId?: string;
  providerId?: string;
  /** Where the bucket came from: `service` (this gateway's metered calls) or `local_logs` (agent logs). */
  source?: string;
  model?: string;
  project?: string;
  workspace?: string;
  session?: string;
}

export interface ActivityRange {
  /** Milliseconds; buckets that overlap [after, before) are selected. */
  after: number;
  before: number;
}

export type ActivityOrigin = 'service' | 'local_logs' | 'polled';

export interface ActivityRow extends GaugeActivityBucket {
  /** The Gauge account the bucket belongs to: its source (a local-log source and the service are accounts). */
  accountId: string;
  source: ActivityOrigin;
}

export interface ActivityPage {
  data: ActivityRow[];
  hasMore: boolean;
}

const isoHour = (ms: number) => new Date(Math.floor(ms / HOUR_MS) * HOUR_MS).toISOString();

/**
 * The key bounds of the hours that overlap [after, before): the hour holding `after` (an hour that ends exactly
 * at `after` does not overlap) up to, not including, the hour that starts at or after `before`.
 */
export function hourBounds(r: ActivityRange): { first: string; end: string } {
  const lastStart = Math.ceil(r.before / HOUR_MS) * HOUR_MS;
  return { first: isoHour(r.after), end: new Date(lastStart).toISOString() };
}

/** Whether the bucket starting at `hourMs` overlaps [after, before). */
export function overlaps(hourMs: number, r: ActivityRange): boolean {
  return hourMs < r.before && hourMs + HOUR_MS > r.after;
}

function matches(row: ActivityRow, f: ActivityFilter): boolean {
  return (
    (f.sourceId === undefined || row.sourceId === f.sourceId) &&
    (f.accountId === undefined || row.accountId === f.accountId) &&
    (f.providerId === undefined || row.providerId === f.providerId) &&
    (f.source === undefined || row.source === f.source) &&
    (f.model === undefined || row.model === f.model) &&
    (f.project === undefined || row.project === f.project) &&
    (f.workspace === undefined || row.workspace === f.workspace) &&
    (f.session === undefined || row.session === f.session)
  );
}

/** Where a source's buckets came from, by source ID; null for a source that no longer exists (skipped). */
export type OriginOf = (sourceId: string) => ActivityOrigin | null;

export function activityQuery(env: StoreEnv) {
  const table = env.db<GaugeActivityBucket>('gauge-activity');
  return function query(
    range: ActivityRange,
    filter: ActivityFilter,
    limit: number,
    offset: number,
    originOf: OriginOf,
  ): ActivityPage {
    const { first, end } = hourBounds(range);
    const data: ActivityRow[] = [];
    let skipped = 0;
    // Reverse: `start` is the upper bound. Neither bound equals a stored key (keys carry a suffix after the hour).
    for (const { value } of table.getRange({ start: end, end: first, reverse: true })) {
      if (!overlaps(Date.parse(value.hour), range)) continue;
      const source = originOf(value.sourceId);
      if (source === null) continue;
      const row: ActivityRow = { ...value, accountId: value.sourceId, source };
      if (!matches(row, filter)) continue;
      if (skipped < offset) {
        skipped++;
        continue;
      }
      if (data.length === limit) return { data, hasMore: true };
      data.push(row);
    }
    return { data, hasMore: false };
  };
}

export type ActivityQuery = ReturnType<typeof activityQuery>;
