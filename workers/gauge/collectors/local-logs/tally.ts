import type { GaugeActivityBucket, GaugeWindow } from '../../../../protocol/gauge.ts';

// Sums what one collect adds: activity buckets (increments to add to the stored ones) and the hourly totals
// the token windows are read from, kept in the source's state for the longest window only.

export interface Usage {
  /** Input not read from or written to a cache. */
  input: number;
  /** Output, reasoning included (as the meter and docs/api.md count it). */
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** The part of `output` spent reasoning, where the log says. */
  reasoning: number;
}

export interface BucketKey {
  hour: string;
  model: string | null;
  project: string | null;
  workspace: string | null;
  session: string | null;
}

/** [hour start ms, input, output, cacheRead, cacheWrite, reasoning, requests] */
export type HourRow = [number, number, number, number, number, number, number];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The 7-day window plus the partial hour at each end. */
const KEEP_MS = 7 * DAY + 2 * HOUR;

export function hourOf(ms: number): string {
  return new Date(Math.floor(ms / HOUR) * HOUR).toISOString();
}

export function keyString(key: BucketKey): string {
  return JSON.stringify([key.hour, key.model, key.project, key.workspace, key.session]);
}

export function keyFromString(text: string): BucketKey | null {
  try {
    const [hour, model, project, workspace, session] = JSON.parse(text) as unknown[];
    const s = (v: unknown): string | null => (typeof v === 'string' ? v : null);
    if (typeof hour !== 'string' || Number.isNaN(Date.parse(hour))) return null;
    return { hour, model: s(model), project: s(project), workspace: s(workspace), session: s(session) };
  } catch {
    return null;
  }
}

// A factory: one closure holds the tally's buckets and hours.
export function createTally(sourceId: string, providerId: string, previousHours: readonly HourRow[]) {
  const buckets = new Map<string, GaugeActivityBucket>();
  const hours = new Map<number, HourRow>(previousHours.map((row) => [row[0], [...row] as HourRow]));

  function add(key: BucketKey, usage: Usage, requests: number): void {
    const id = keyString(key);
    let bucket = buckets.get(id);
    if (bucket === undefined) {
      bucket = {
        sourceId,
        providerId,
        ...key,
        requests: 0,
        inputTokens: 0,
        outputTokens: 0,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
      };
      buckets.set(id, bucket);
    }
    bucket.requests += requests;
    bucket.inputTokens += usage.input;
    bucket.outputTokens += usage.output;
    bucket.cacheReadTokens += usage.cacheRead;
    bucket.cacheWriteTokens += usage.cacheWrite;
    bucket.reasoningTokens += usage.reasoning;
    const start = Date.parse(key.hour);
    const row = hours.get(start) ?? ([start, 0, 0, 0, 0, 0, 0] as HourRow);
    row[1] += usage.input;
    row[2] += usage.output;
    row[3] += usage.cacheRead;
    row[4] += usage.cacheWrite;
    row[5] += usage.reasoning;
    row[6] += requests;
    hours.set(start, row);
  }

  /** Hour rows still inside the longest window, oldest first. */
  function keptHours(now: Date): HourRow[] {
    const floor = now.getTime() - KEEP_MS;
    return [...hours.values()].filter((row) => row[0] >= floor).sort((a, b) => a[0] - b[0]);
  }

  /**
   * Token windows over whole hours: "5h" sums the hour buckets that overlap the last five hours (so up to
   * one hour more), "day" the current UTC day, "7d" the last seven days. Rolling windows have no reset.
   * Reasoning (row[5]) is part of output (row[2]) and is not added again.
   */
  function windows(now: Date): GaugeWindow[] {
    const t = now.getTime();
    const dayStart = Math.floor(t / DAY) * DAY;
    const sum = (from: number): number => {
      let total = 0;
      for (const row of hours.values())
        if (row[0] + HOUR > from && row[0] <= t) total += row[1] + row[2] + row[3] + row[4];
      return total;
    };
    const window = (id: string, period: string, from: number, resetsAt: string | null): GaugeWindow => ({
      id,
      kind: 'tokens',
      period,
      used: sum(from),
      limit: null,
      remaining: null,
      utilization: null,
      resetsAt,
    });
    return [
      window('tokens-5h', '5h', t - 5 * HOUR, null),
      window('tokens-day', 'day', dayStart, new Date(dayStart + DAY).toISOString()),
      window('tokens-7d', '7d', t - 7 * DAY, null),
    ];
  }

  return {
    add,
    windows,
    keptHours,
    bucketCount: (): number => buckets.size,
    buckets: (): GaugeActivityBucket[] => [...buckets.values()],
  };
}

export type Tally = ReturnType<typeof createTally>;
