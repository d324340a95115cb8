import type { LimitRecord } from '../protocol/http/limits.ts';
import type { StoreEnv } from './env.ts';
import { recordRepo, type RecordRepo } from './record-repo.ts';

// Enforced limits and their counters. The control plane is the only writer of both. Limit keys are IDs (`lim_` +
// a ULID) made here, never taken from a client. Counter keys are `limitId|scopeKey`, the scope key a token,
// service-account or session ID or a pack slug that admission bounded to 128 safe characters; each value is the
// counter's window start and its settled use in that window, as a decimal string (nano-dollars pass 2^53).

export interface StoredCounter {
  windowStart: number;
  used: string;
}

export interface LimitRepo extends RecordRepo<LimitRecord> {
  counters(): { limitId: string; scopeKey: string; counter: StoredCounter }[];
  stageCounter(limitId: string, scopeKey: string, counter: StoredCounter): void;
  /** Stages the removal of every counter of a limit (it is being deleted). */
  stageForget(limitId: string): void;
}

export function limitRepo(env: StoreEnv): LimitRepo {
  const counters = env.db<StoredCounter>('limit-counters');
  return {
    ...recordRepo<LimitRecord>(env, 'limits', (l) => l.id),
    counters: () =>
      [...counters.getRange()].map(({ key, value }) => {
        const text = String(key);
        const bar = text.indexOf('|');
        return { limitId: text.slice(0, bar), scopeKey: text.slice(bar + 1), counter: value };
      }),
    stageCounter: (limitId, scopeKey, counter) => void counters.put(`${limitId}|${scopeKey}`, counter),
    stageForget(limitId) {
      for (const key of counters.getKeys({ start: `${limitId}|`, end: `${limitId}}` })) void counters.remove(key);
    },
  };
}
