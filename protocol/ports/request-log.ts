import type { ReplayAnswer, RequestLogEntry, RequestLogFilter, RequestLogPage } from '../http/request-log.ts';
import type { Principal } from '../principal.ts';
import { methodsOf } from './methods.ts';

// The request log as the edge reaches it: the routes read it (edge/routes/requests.ts), the gateway's capture
// writes to it on the thread that served the call (edge/gateway/request-capture.ts).

export interface RequestLogPort {
  list(filter: RequestLogFilter): RequestLogPage | Promise<RequestLogPage>;
  get(id: string): RequestLogEntry | undefined | Promise<RequestLogEntry | undefined>;
}

export const REQUEST_LOG_METHODS = methodsOf<RequestLogPort>()(['list', 'get']);

export interface RequestLogSink {
  /** Whether this token's calls are logged now: the one check a call pays while the log is off. */
  on(tokenId: string): boolean;
  /** Stores an entry; never throws (a failure is the sink's to log). */
  write(entry: RequestLogEntry): void;
}

/** POST /v1/requests/{id}/replay: runs where the gateway's routes are (the main thread), as `principal`. */
export interface ReplayPort {
  replay(id: string, model: string, principal: Principal): Promise<ReplayAnswer>;
}
