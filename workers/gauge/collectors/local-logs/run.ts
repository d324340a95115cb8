import type { GaugeActivityBucket, GaugeWindow } from '../../../../protocol/gauge.ts';
import type { CollectContext } from '../types.ts';
import { discover } from './discover.ts';
import { localIdentity, shortHash, type Identity } from './labels.ts';
import { configuredRoots } from './roots.ts';
import {
  MAX_FILES,
  SEEN_CAP,
  TAIL_CAP,
  restoreState,
  type FileState,
  type LocalLogState,
  type TailEntry,
} from './state.ts';
import { readNewLines } from './tail.ts';
import { createTally, keyFromString, keyString, type BucketKey, type Usage } from './tally.ts';

// One collect of a local-logs source: find the files, read what each gained, let the dialect turn lines
// into counted usage, deduplicate by message ID, and hand back increments, windows and the next cursor.

/** A first collect over a large history continues where it stopped next time, inside the time limit. */
export const BYTES_PER_COLLECT = 64 << 20;
/** Under the actor's cap on buckets per result (workers/gauge/sanitize.ts), so none is dropped. */
export const BUCKETS_PER_COLLECT = 4000;

export interface LineSink {
  /** One model call. `id` deduplicates it (null: the dialect deduplicates itself). */
  count(id: string | null, key: BucketKey, usage: Usage): void;
  malformed(): void;
  duplicate(): void;
}

/** One JSONL line as an object; blank lines are null, and anything but a JSON object is counted malformed. */
export function objectLine(text: string, sink: LineSink): Record<string, unknown> | null {
  if (text.trim() === '') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    sink.malformed();
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    sink.malformed();
    return null;
  }
  return parsed as Record<string, unknown>;
}

export interface Dialect<M> {
  matches(name: string): boolean;
  defaultRoots(env: NodeJS.ProcessEnv, home: string): string[];
  /** A file's memory from its state, or a fresh one (`raw` undefined) for a new or restarted file. */
  memory(raw: unknown): M;
  line(text: string, memory: M, sink: LineSink, identity: Identity): void;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  identity?: Identity;
  bytesPerCollect?: number;
}

export interface LocalLogsRun {
  activity: GaugeActivityBucket[];
  windows: GaugeWindow[];
  state: LocalLogState;
  counters: Record<string, number>;
  /** Nothing to read: no root exists. */
  noRoots: boolean;
}

/**
 * Where a dialect's lines go: each message counted once by its ID (`seen`), and a message written again with a
 * higher output count (Claude Code's streamed lines) adds only what is new, to the bucket it was first counted in.
 */
function countingSink(
  tally: ReturnType<typeof createTally>,
  seen: Set<string>,
  tail: Map<string, TailEntry>,
  counters: Record<string, number>,
): LineSink {
  return {
    count(id, key, usage) {
      if (id !== null) {
        const hash = shortHash(id, 12);
        const last = tail.get(hash);
        if (last !== undefined) {
          counters['duplicates']!++;
          // Claude Code writes a streamed message more than once; only the last line has the final output
          // count. Add what a later line has beyond what was counted, to the bucket first counted.
          const original = keyFromString(last[5]);
          if (usage.output > last[2] && original !== null) {
            const more = (now: number, then: number): number => Math.max(0, now - then);
            tally.add(
              original,
              {
                input: more(usage.input, last[1]),
                output: usage.output - last[2],
                cacheRead: more(usage.cacheRead, last[3]),
                cacheWrite: more(usage.cacheWrite, last[4]),
                reasoning: 0,
              },
              0,
            );
            tail.delete(hash);
            tail.set(hash, [
              hash,
              Math.max(usage.input, last[1]),
              usage.output,
              Math.max(usage.cacheRead, last[3]),
              Math.max(usage.cacheWrite, last[4]),
              last[5],
            ]);
          }
          return;
        }
        if (seen.has(hash)) {
          counters['duplicates']!++;
          return;
        }
        seen.add(hash);
        tail.set(hash, [hash, usage.input, usage.output, usage.cacheRead, usage.cacheWrite, keyString(key)]);
        if (tail.size > TAIL_CAP) tail.delete(tail.keys().next().value!);
      }
      tally.add(key, usage, 1);
    },
    malformed: () => void counters['linesMalformed']!++,
    duplicate: () => void counters['duplicates']!++,
  };
}

export async function runLocalLogs<M>(
  ctx: CollectContext,
  providerId: string,
  dialect: Dialect<M>,
  options: RunOptions = {},
): Promise<LocalLogsRun> {
  const identity = options.identity ?? localIdentity();
  const roots =
    configuredRoots(ctx.config, identity.home) ?? dialect.defaultRoots(options.env ?? process.env, identity.home);
  const previous = restoreState(ctx.state);
  const found = await discover({
    roots,
    matches: dialect.matches,
    maxFiles: MAX_FILES,
    maxDepth: 8,
    maxEntries: 50_000,
    signal: ctx.signal,
  });
  const counters: Record<string, number> = {
    files: found.files.length,
    filesRead: 0,
    bytesRead: 0,
    linesMalformed: 0,
    linesTooLong: 0,
    duplicates: 0,
    filesUnreadable: found.unreadable,
    linksOutside: found.linksOutside,
    filesOverCap: found.overCap,
    filesRestarted: 0,
    walkTruncated: found.truncated ? 1 : 0,
    budgetExhausted: 0,
  };
  const tally = createTally(ctx.accountId, providerId, previous.hours);
  const seen = new Set(previous.seen);
  const tail = new Map<string, TailEntry>(previous.tail.map((e) => [e[0], e]));

  const sink = countingSink(tally, seen, tail, counters);

  const files: Record<string, FileState> = {};
  let budget = options.bytesPerCollect ?? BYTES_PER_COLLECT;
  for (const file of found.files) {
    const key = shortHash(`file:${file.path}`, 16);
    const before = previous.files[key];
    if (budget <= 0 || tally.bucketCount() >= BUCKETS_PER_COLLECT) {
      counters['budgetExhausted'] = 1;
      if (before !== undefined) files[key] = before;
      continue;
    }
    const restarting = before !== undefined && (before.d !== file.identity || file.size < before.o);
    const memory = dialect.memory(restarting ? undefined : before?.m);
    try {
      const outcome = await readNewLines(file, before, budget, ctx.signal, (text) =>
        dialect.line(text, memory, sink, identity),
      );
      budget -= outcome.bytesRead;
      counters['bytesRead']! += outcome.bytesRead;
      counters['linesTooLong']! += outcome.longLines;
      if (outcome.bytesRead > 0) counters['filesRead']!++;
      if (outcome.restarted) counters['filesRestarted']!++;
      files[key] = { ...outcome.cursor, ...(memory !== undefined ? { m: memory } : {}) };
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      // Unreadable now (permissions, vanished between the walk and the read): keep the old cursor.
      counters['filesUnreadable']!++;
      if (before !== undefined) files[key] = before;
    }
  }

  return {
    activity: tally.buckets(),
    windows: tally.windows(ctx.now()),
    state: {
      v: 1,
      files,
      seen: [...seen].slice(-SEEN_CAP),
      tail: [...tail.values()],
      hours: tally.keptHours(ctx.now()),
    },
    counters,
    noRoots: found.rootsFound === 0,
  };
}
