import type { Logger } from 'pino';
import { ClientClosed, errorEnvelope, toServiceError } from '../../protocol/errors.ts';
import type { RequestObserver } from '../../protocol/metrics.ts';
import { redactSecrets } from '../../protocol/redact.ts';
import { afterAnswers } from './after-answers.ts';
import type { CorsPolicy } from './cors.ts';
import type { AccessLog } from './log.ts';
import { setRequestIdHeaders } from './request-id.ts';
import type { RouteResult } from './router.ts';
import type { EdgeRequestHead, EdgeResponse, ResponseWriter } from './types.ts';

// How the edge's core (app.ts) turns a route's result or error into an answer: the envelope, the request IDs,
// CORS, the request log line and the metrics, for a whole answer or a stream.

const JSON_TYPE = 'application/json';

export interface AnswerDeps {
  log: Logger;
  access: AccessLog;
  observe?: RequestObserver;
  cors(): CorsPolicy;
  isDraining(): boolean;
}

export function createAnswers(deps: AnswerDeps) {
  const { log, access, observe } = deps;
  return { respond, respondError, finish };

  function respond(
    head: EdgeRequestHead,
    requestId: string,
    started: number,
    routeName: string,
    result: RouteResult,
  ): EdgeResponse {
    if (result.stream) return streamed(head, requestId, started, routeName, result.stream);
    if (result.raw !== undefined)
      return finish(head, requestId, started, routeName, result.status ?? 200, result.headers ?? {}, result.raw);
    const headers: Record<string, string> = { 'content-type': JSON_TYPE, ...result.headers };
    return finish(head, requestId, started, routeName, result.status ?? 200, headers, JSON.stringify(result.body));
  }

  /** A streamed answer: the edge's headers join the route's at `head`, and the log line is written at the end. */
  function streamed(
    head: EdgeRequestHead,
    requestId: string,
    started: number,
    routeName: string,
    stream: NonNullable<RouteResult['stream']>,
  ): EdgeResponse {
    const edgeHeaders: Record<string, string> = {};
    setRequestIdHeaders(edgeHeaders, requestId);
    const origin = head.headers['origin'];
    const cors = deps.cors();
    if (cors.allows(origin)) Object.assign(edgeHeaders, cors.responseHeaders(origin));
    return {
      status: 0,
      headers: edgeHeaders,
      body: '',
      stream(out) {
        let status = 0;
        let logged = false;
        const log_ = (outcome: string) => {
          if (logged) return;
          logged = true;
          const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
          access.request(requestId, head.method, routeName, status, outcome, durationMs);
          observe?.answered(routeName, head.method, status, durationMs);
        };
        out.onAbort(() => log_('client_aborted'));
        if (head.method === 'HEAD') {
          stream(headOnly(out, () => log_('completed')));
          return;
        }
        stream(withEdgeHeaders(out, edgeHeaders, (s) => (status = s), log_));
      },
    };
  }

  function respondError(
    head: EdgeRequestHead,
    requestId: string,
    started: number,
    routeName: string,
    err: unknown,
  ): EdgeResponse {
    if (err instanceof ClientClosed) return finish(head, requestId, started, routeName, 499, {}, '');
    const error = toServiceError(err);
    observe?.failed(routeName, error.code);
    if (error.code === 'INTERNAL') logInternal(log, requestId, err);
    const headers: Record<string, string> = { 'content-type': JSON_TYPE, ...error.headers };
    return finish(
      head,
      requestId,
      started,
      routeName,
      error.status,
      headers,
      JSON.stringify(errorEnvelope(error, requestId)),
    );
  }

  function finish(
    head: EdgeRequestHead,
    requestId: string,
    started: number,
    routeName: string,
    status: number,
    headers: Record<string, string>,
    body: string | Uint8Array,
  ): EdgeResponse {
    setRequestIdHeaders(headers, requestId);
    const origin = head.headers['origin'];
    const cors = deps.cors();
    if (cors.allows(origin)) Object.assign(headers, cors.responseHeaders(origin));
    if (deps.isDraining()) headers['connection'] = 'close';
    const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
    afterAnswers(() => {
      access.request(requestId, head.method, routeName, status, null, durationMs);
      observe?.answered(routeName, head.method, status, durationMs);
    });
    // A HEAD answer has no body (RFC 9110 9.3.2): clients that read one would take it for the next response.
    return { status, headers, body: head.method === 'HEAD' ? '' : body };
  }
}

/** The route's writer of a stream: its head gets the edge's headers, and its end or abort writes the log line. */
function withEdgeHeaders(
  out: ResponseWriter,
  edgeHeaders: Record<string, string>,
  headed: (status: number) => void,
  logged: (outcome: string) => void,
): ResponseWriter {
  return {
    head(s, headers) {
      headed(s);
      const all: Record<string, string> = {};
      for (const name in headers) all[name] = headers[name]!;
      for (const name in edgeHeaders) all[name] = edgeHeaders[name]!;
      out.head(s, all);
    },
    write: (chunk) => out.write(chunk),
    end(chunk, failed) {
      out.end(chunk);
      logged(failed === true ? 'upstream_failed' : 'completed');
    },
    abort() {
      out.abort();
      logged('upstream_failed');
    },
    onWritable: (cb) => out.onWritable(cb),
    // The transport keeps one abort callback: the route's replaces the one above, so it logs too.
    onAbort: (cb) =>
      out.onAbort(() => {
        logged('client_aborted');
        cb();
      }),
  };
}

/**
 * A streamed GET asked with HEAD: its status and headers, then the end. The route is told the client left
 * (its abort callback), so it lets go of what it holds (an event subscription, a job watch).
 */
function headOnly(out: ResponseWriter, done: () => void): ResponseWriter {
  let ended = false;
  let routeAbort: (() => void) | null = null;
  return {
    head(s, headers) {
      if (ended) return;
      ended = true;
      out.head(s, headers);
      out.end();
      done();
      routeAbort?.();
    },
    write: () => !ended,
    end() {},
    abort() {},
    onWritable() {},
    onAbort(cb) {
      routeAbort = cb;
      if (ended) cb();
    },
  };
}

/** An internal error's cause goes to the log under the request ID (secrets redacted), never to the client. */
function logInternal(log: Logger, requestId: string, err: unknown): void {
  const cause =
    err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : { message: String(err) };
  log.error(
    {
      reqId: requestId,
      err: { ...cause, message: redactSecrets(cause.message), stack: cause.stack && redactSecrets(cause.stack) },
    },
    'internal error',
  );
}
