import type { Cursor } from './tail.ts';
import type { HourRow } from './tally.ts';

// The cursor a local-logs source hands back each time, validated on the way in (it comes from the store and
// may predate this code) and bounded on the way out: at most MAX_FILES files keyed by a hash of their path,
// SEEN_CAP message-ID hashes, TAIL_CAP recent counted messages and one week of hourly totals.

export const MAX_FILES = 2000;
/** Hashes of recently counted message IDs: catches copies of recent messages in another session's file. */
export const SEEN_CAP = 8192;
/**
 * The last counted messages with what was counted, so a later, longer line of the same message adds only the
 * difference.
 */
export const TAIL_CAP = 256;

export interface FileState extends Cursor {
  /** The dialect's per-file memory (labels from a header line, model, cumulative totals). */
  m?: unknown;
}

/** [ID hash, input, output, cacheRead, cacheWrite, bucket key] as first counted (or raised since). */
export type TailEntry = [string, number, number, number, number, string];

export interface LocalLogState {
  v: 1;
  files: Record<string, FileState>;
  seen: string[];
  tail: TailEntry[];
  hours: HourRow[];
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function fileState(raw: unknown): FileState | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const { d, o, skip, m } = raw as Record<string, unknown>;
  if (typeof d !== 'string' || d.length > 64 || !isCount(o)) return null;
  return { d, o, ...(skip === 1 ? { skip: 1 as const } : {}), ...(m !== undefined ? { m } : {}) };
}

export function restoreState(raw: unknown): LocalLogState {
  const empty: LocalLogState = { v: 1, files: {}, seen: [], tail: [], hours: [] };
  if (typeof raw !== 'object' || raw === null || (raw as { v?: unknown }).v !== 1) return empty;
  const state = raw as Record<string, unknown>;
  const files: Record<string, FileState> = {};
  if (typeof state['files'] === 'object' && state['files'] !== null) {
    for (const [key, value] of Object.entries(state['files']).slice(0, MAX_FILES)) {
      const file = fileState(value);
      if (file !== null && key.length <= 32) files[key] = file;
    }
  }
  const seen = Array.isArray(state['seen'])
    ? state['seen'].filter((s): s is string => typeof s === 'string' && s.length <= 32).slice(-SEEN_CAP)
    : [];
  const tail = Array.isArray(state['tail'])
    ? state['tail']
        .filter(
          (e): e is TailEntry =>
            Array.isArray(e) &&
            e.length === 6 &&
            typeof e[0] === 'string' &&
            [1, 2, 3, 4].every((i) => isCount(e[i])) &&
            typeof e[5] === 'string' &&
            e[5].length <= 2048,
        )
        .slice(-TAIL_CAP)
    : [];
  const hours = Array.isArray(state['hours'])
    ? state['hours'].filter((r): r is HourRow => Array.isArray(r) && r.length === 7 && r.every(isCount)).slice(-400)
    : [];
  return { v: 1, files, seen, tail, hours };
}
