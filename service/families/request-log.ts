import { requestLogRoutes } from '../../edge/routes/requests.ts';
import { REQUEST_LOG_METHODS, type RequestLogPort } from '../../protocol/ports/request-log.ts';
import type { RequestLogSink } from '../../protocol/ports/request-log.ts';
import { requestLogRepo, requestLogSink, type RequestLogRepo } from '../../store/request-log-repo.ts';
import type { Built, Family } from '../family.ts';
import type { Base } from '../parts.ts';
import type { SettingsParts } from './settings.ts';
import type { StoreParts } from './store.ts';

// The request log (docs/api.md, Request log): its routes, the main thread's writer, and the hourly prune. Edge
// threads write their own calls' entries into the same store (service/edge-worker.ts). It starts before the gateway
// so that it closes after it: the last calls' entries are written by then.

export interface RequestLogParts {
  requestLog: RequestLogRepo;
  /** What this thread's gateway captures calls into. */
  requestLogSink: RequestLogSink;
}

const PRUNE_EVERY_MS = 3_600_000;

export function requestLogFamily(p: Base & StoreParts & SettingsParts): Built<RequestLogParts> {
  const { env, log } = p;
  // Date.now, not p.now (a test's clock of limits' windows): entries carry the wall-clock times of their calls.
  const repo = requestLogRepo(env);
  const setting = () => p.settings.current().requestLog;
  const sink = requestLogSink(repo, setting, (err) =>
    log.warn({ err: String(err).slice(0, 300) }, 'could not keep a request log entry'),
  );
  const prune = () => {
    const s = setting();
    repo
      .prune({ maxBytes: s.maxMegabytes * 1024 * 1024, retentionDays: s.retentionDays })
      .then((dropped) => dropped > 0 && log.info({ dropped }, 'pruned the request log'))
      .catch((err: unknown) => log.warn({ err: String(err).slice(0, 300) }, 'could not prune the request log'));
  };
  let timer: NodeJS.Timeout | null = null;
  const family: Family = {
    routes: () => [...requestLogRoutes(p.control.port<RequestLogPort>('request-log', repo, REQUEST_LOG_METHODS))],
    ready() {
      prune();
      timer = setInterval(prune, PRUNE_EVERY_MS);
      timer.unref();
    },
    close() {
      if (timer !== null) clearInterval(timer);
    },
  };
  return { family, parts: { requestLog: repo, requestLogSink: sink } };
}
