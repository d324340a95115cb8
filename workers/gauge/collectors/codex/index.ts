import type { Collector, CollectContext, CollectResult } from '../types.ts';
import { runLocalLogs, type RunOptions } from '../local-logs/run.ts';
import { codexDefaultRoots } from '../local-logs/roots.ts';
import { creditsOf, limitWindows, restoreSnapshot, type LimitSnapshot } from './limits.ts';
import { createCodexDialect } from './parse.ts';

// Codex's own rollout logs, read-only and incrementally: per-session token counts as activity increments,
// token windows for this machine, and the account's rate-limit windows from the newest token_count event.

export { codexDefaultRoots as defaultRoots };

export function createCodexCollector(options: RunOptions = {}): Collector {
  return {
    providerId: 'codex',
    async collect(ctx: CollectContext): Promise<CollectResult> {
      let limits: LimitSnapshot | null = restoreSnapshot((ctx.state as { limits?: unknown } | null)?.limits);
      const dialect = createCodexDialect((snapshot) => {
        if (limits === null || snapshot.at >= limits.at) limits = snapshot;
      });
      const run = await runLocalLogs(ctx, 'codex', dialect, options);
      const state = { ...run.state, limits };
      if (run.noRoots) return { readings: [], activity: [], state, counters: run.counters };
      const now = ctx.now();
      const current = limits as LimitSnapshot | null;
      return {
        readings: [
          {
            accountId: ctx.accountId,
            providerId: 'codex',
            collectedAt: now.toISOString(),
            source: 'local_logs',
            // Token windows cover this machine only; the rate-limit windows are the account's, as of the
            // newest logged event.
            confidence: 'medium',
            windows: [...run.windows, ...(current === null ? [] : limitWindows(current, now))],
            spend: null,
            credits: current === null ? null : creditsOf(current),
          },
        ],
        activity: run.activity,
        state,
        counters: run.counters,
      };
    },
  };
}

export const collector: Collector = createCodexCollector();
