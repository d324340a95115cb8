import type { Logger } from 'pino';
import type { UsageEvent } from '../../protocol/gateway.ts';
import { redactSecrets } from '../../protocol/redact.ts';
import type { PoolMeter } from '../../workers/proxy/relay-pool.ts';
import { afterAnswers } from '../http/after-answers.ts';
import { lineWriter, logBase } from '../http/log.ts';

/**
 * Where the usage the relay workers meter goes on this edge thread: each batch's events to `recordUsage` (the
 * meter, Gauge's activity, /metrics) and its lines to `log`'s destination, once this turn's answers are
 * written, as the gateway does with the usage of the calls it meters itself (routes.ts, `follow`).
 */
export function poolMeter(log: Logger, recordUsage: (event: UsageEvent) => void): PoolMeter {
  const write = lineWriter(log);
  const hand = (events: UsageEvent[], lines: string) => {
    if (lines !== '') write(lines);
    for (const event of events) {
      try {
        recordUsage(event);
      } catch (err) {
        // One event's failure must not cost the others theirs.
        const message = redactSecrets(err instanceof Error ? err.message : String(err));
        log.error({ reqId: event.requestId, err: { message } }, 'recording a usage event failed');
      }
    }
  };
  return {
    lineBase: log.isLevelEnabled('info') ? logBase(log) : null,
    report: (events, lines) => afterAnswers(() => hand(events, lines)),
  };
}
