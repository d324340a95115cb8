import type { LimitRecord, LoopBrake, PausedSession } from '../protocol/http/limits.ts';
import type { StoreEnv } from './env.ts';
import { recordRepo, type RecordRepo } from './record-repo.ts';

// Enforced limits and their counters. The control plane is the only writer of both. Limit keys are IDs (`lim_` +
// a ULID) made here, never taken from a client. Counter keys are `limitId|scopeKey`, the scope key a token,
// service-account or session ID or a pack slug that admission bounded to 128 safe characters; each value is the
// counter's window start and its settled use in that window, as a decimal string (nano-dollars pass 2^53).
// The loop brake's settings and the sessions it paused (keys bounded as scope keys) live beside them, and so does
// the last generation of the settlement journal (store/limit-journal.ts) that the stored counters include.

export interface StoredCounter {
  windowStart: number;
  used: string;
}

export interface LimitRepo extends RecordRepo<LimitRecord> {
  counters(): { limitId: string; scopeKey: string; counter: StoredCounter }[];
  stageCounter(limitId: string, scopeKey: string, counter: StoredCounter): void;
  /** Stages the removal of one counter. */
  stageForgetCounter(limitId: string, scopeKey: string): void;
  /** Stages the removal of every counter of a limit (it is being deleted). */
  stageForget(limitId: string): void;
  /** The last journal generation (store/limit-journal.ts) the stored counters include; 0 before any. */
  journalCovered(): number;
  stageJournalCovered(generation: number): void;
  /** The loop brake's settings; undefined until first changed. */
  brake(): LoopBrake | undefined;
  stageBrake(brake: LoopBrake): void;
  /** Sessions the loop brake paused, keyed by the session's (bounded) ID. */
  paused(): PausedSession[];
  stagePaused(session: PausedSession): void;
  stageResumed(session: string): void;
}

export function limitRepo(env: StoreEnv): LimitRepo {
  const counters = env.db<StoredCounter>('limit-counters');
  const meta = env.db<LoopBrake | { covered: number }>('limit-meta');
  const sessions = env.db<PausedSession>('limit-paused-sessions');
  return {
    ...recordRepo<LimitRecord>(env, 'limits', (l) => l.id),
    counters: () =>
      [...counters.getRange()].map(({ key, value }) => {
        const text = String(key);
        const bar = text.indexOf('|');
        return { limitId: text.slice(0, bar), scopeKey: text.slice(bar + 1), counter: value };
      }),
    stageCounter: (limitId, scopeKey, counter) => void counters.put(`${limitId}|${scopeKey}`, counter),
    stageForgetCounter: (limitId, scopeKey) => void counters.remove(`${limitId}|${scopeKey}`),
    journalCovered: () => (meta.get('journal') as { covered: number } | undefined)?.covered ?? 0,
    stageJournalCovered: (generation) => void meta.put('journal', { covered: generation }),
    brake: () => meta.get('loop-brake') as LoopBrake | undefined,
    stageBrake: (brake) => void meta.put('loop-brake', brake),
    paused: () => [...sessions.getRange()].map(({ value }) => value),
    stagePaused: (session) => void sessions.put(session.session, session),
    stageResumed: (session) => void sessions.remove(session),
    stageForget(limitId) {
      for (const key of counters.getKeys({ start: `${limitId}|`, end: `${limitId}}` })) void counters.remove(key);
    },
  };
}
