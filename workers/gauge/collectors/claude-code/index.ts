import type { Collector, CollectContext, CollectResult } from '../types.ts';
import { runLocalLogs, type RunOptions } from '../local-logs/run.ts';
import { claudeDefaultRoots } from '../local-logs/roots.ts';
import { claudeDialect } from './parse.ts';

// Claude Code's own transcripts, read-only and incrementally: per-session token counts as activity
// increments, and token windows (last 5h, today, 7d) for this machine.

export { claudeDefaultRoots as defaultRoots };

export function createClaudeCodeCollector(options: RunOptions = {}): Collector {
  return {
    providerId: 'claude-code',
    async collect(ctx: CollectContext): Promise<CollectResult> {
      const run = await runLocalLogs(ctx, 'claude-code', claudeDialect, options);
      if (run.noRoots) return { readings: [], activity: [], state: run.state, counters: run.counters };
      return {
        readings: [
          {
            accountId: ctx.accountId,
            providerId: 'claude-code',
            collectedAt: ctx.now().toISOString(),
            source: 'local_logs',
            // This machine's sessions only: other devices and claude.ai are not in these logs.
            confidence: 'medium',
            windows: run.windows,
            spend: null,
            credits: null,
          },
        ],
        activity: run.activity,
        state: run.state,
        counters: run.counters,
      };
    },
  };
}

export const collector: Collector = createClaudeCodeCollector();
