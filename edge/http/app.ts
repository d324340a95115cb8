import type { Logger } from 'pino';
import { ClientClosed, errorEnvelope, ServiceError, toServiceError } from '../../protocol/errors.ts';
import { redactSecrets } from '../../protocol/redact.ts';
import { grants, type Scope } from '../../protocol/scopes.ts';
import { checkBody } from '../../protocol/validate.ts';
import { afterAnswers } from './after-answers.ts';
import { extractToken } from './auth.ts';
import type { CorsPolicy } from './cors.ts';
import { hostAllowed } from './host-check.ts';
import { parseJsonBody } from './json-body.ts';
import { createAccessLogger } from './log.ts';
import { newRequestId, setRequestIdHeaders } from './request-id.ts';
import { createRouter, type RouteDef, type RouteResult } from './router.ts';
import type { RequestObserver } from '../../protocol/metrics.ts';
import type { TokenAuthPort } from '../../protocol/ports/tokens.ts';
import type { BodyStream, EdgeRequest, EdgeRequestHead, EdgeResponse, Principal, ResponseWriter } from './types.ts';

// The core of the edge: host check, CORS, routing, auth, body parsing, errors and the request log line.
// No socket here; server.ts adapts uWebSockets.js to `prepare` and `run`.

/** `authenticate` (TokenAuthPort) runs before routing, synchronously, on every request. */
export interface AppDeps extends TokenAuthPort {
  routes: readonly RouteDef[];
  log: Logger;
  /** Read per request: settings changes apply immediately. */
  cors(): CorsPolicy;
  jsonBodyLimit(): number;
  multipartBodyLimit(): number;
  /** The listener as bound: its host, and whether it is local-only (then the Host header is checked). */
  listener: { host: string; networkExposed: boolean };
  isDraining(): boolean;
  /** Hears every answer and error code after it is written, for GET /metrics. */
  observe?: RequestObserver;
}

/** A request whose head has been checked; the adapter reads the body only when `bodyLimit` is set. */
export interface Prepared {
  readonly requestId: string;
  /** Maximum body bytes to read, or null when the answer does not depend on a body. */
  readonly bodyLimit: number | null;
  /** True when the route reads the body as a stream: call `runStream` instead of `run`. */
  readonly streamBody: boolean;
  /**
   * True when the body may be read into a slot of the body arena (workers/shared/body-arena.ts): the route
   * reads it only until `run` settles, unless it hands it to a relay worker.
   */
  readonly sharedBody: boolean;
  /**
   * True for a management write: the adapter reads no further request from the connection until this one is
   * answered, so a pipelined request can never cut off the answer to a committed write. Gateway calls are
   * not held: the client's disconnect must still reach them while they wait for the upstream.
   */
  readonly holdConnection: boolean;
  run(body: Buffer | null): Promise<EdgeResponse>;
  runStream(body: BodyStream): Promise<EdgeResponse>;
  /** Answers with an error the adapter met (body too large, client gone). */
  fail(err: ServiceError): EdgeResponse;
  /** The adapter saw the client disconnect. */
  abort(): void;
}

const JSON_TYPE = 'application/json';
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

// A factory: one closure holds the instance's state and returns its methods, each short; hence its length.
export function createApp(deps: AppDeps) {
  const router = createRouter(deps.routes);
  const { log } = deps;
  const access = createAccessLogger(log);
  const observe = deps.observe;

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
        stream({
          head(s, headers) {
            status = s;
            const all: Record<string, string> = {};
            for (const name in headers) all[name] = headers[name]!;
            for (const name in edgeHeaders) all[name] = edgeHeaders[name]!;
            out.head(s, all);
          },
          write: (chunk) => out.write(chunk),
          end(chunk, failed) {
            out.end(chunk);
            log_(failed === true ? 'upstream_failed' : 'completed');
          },
          abort() {
            out.abort();
            log_('upstream_failed');
          },
          onWritable: (cb) => out.onWritable(cb),
          // The transport keeps one abort callback: the route's replaces the one above, so it logs too.
          onAbort: (cb) =>
            out.onAbort(() => {
              log_('client_aborted');
              cb();
            }),
        });
      },
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
    if (error.code === 'INTERNAL') {
      // The cause goes to the log under the request ID, never to the client.
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

  function authenticate(head: EdgeRequestHead): Principal {
    const secret = extractToken(head.headers);
    if (secret === undefined) {
      throw new ServiceError('UNAUTHORIZED', 'A local token is required: send it as `Authorization: Bearer <token>`.');
    }
    const result = deps.authenticate(secret);
    if (!result.ok) {
      throw new ServiceError(
        'UNAUTHORIZED',
        result.reason === 'expired' ? 'The local token has expired.' : 'The local token is not valid.',
      );
    }
    return result.principal;
  }

  function prepare(head: EdgeRequestHead): Prepared {
    const requestId = newRequestId();
    const started = performance.now();
    let routeName = 'unmatched';
    let abortCallbacks: (() => void)[] | null = null;
    const abort = () => {
      const callbacks = abortCallbacks ?? [];
      abortCallbacks = [];
      for (const callback of callbacks) callback();
    };
    const onAbort = (callback: () => void) => (abortCallbacks ??= []).push(callback);
    const immediate = (response: EdgeResponse): Prepared => ({
      requestId,
      bodyLimit: null,
      streamBody: false,
      sharedBody: false,
      holdConnection: false,
      run: async () => response,
      runStream: async () => response,
      fail: (err) => respondError(head, requestId, started, routeName, err),
      abort,
    });
    try {
      if (!deps.listener.networkExposed && !hostAllowed(head.headers['host'], deps.listener.host)) {
        throw new ServiceError(
          'FORBIDDEN',
          'The Host header must name this machine (localhost or a loopback address).',
        );
      }
      if (head.method === 'OPTIONS' && head.headers['access-control-request-method'] !== undefined) {
        routeName = 'preflight';
        const origin = head.headers['origin'];
        const cors = deps.cors();
        if (!cors.allows(origin))
          throw new ServiceError('FORBIDDEN', 'This origin is not allowed (see cors.allowedOrigins).');
        const headers = cors.preflightHeaders(origin, head.headers['access-control-request-headers']);
        return immediate(finish(head, requestId, started, routeName, 204, headers, ''));
      }
      const match = router.match(head.method, head.path);
      const route = match.kind === 'found' ? match.route : undefined;
      if (route) routeName = `${route.method} ${route.path}`;
      // Every /v1 route needs a token, even to learn that a path does not exist there.
      const principal =
        route?.scope === 'public' || (!route && !head.path.startsWith('/v1/')) ? null : authenticate(head);
      if (match.kind === 'none')
        throw new ServiceError('NOT_FOUND', `No route for ${head.method} ${head.path.slice(0, 200)}.`);
      if (match.kind === 'method') {
        throw new ServiceError(
          'METHOD_NOT_ALLOWED',
          `${head.method} is not supported here; use ${match.allow.join(', ')}.`,
          {
            headers: { allow: match.allow.join(', ') },
          },
        );
      }
      const { route: def, params } = match;
      if (principal !== null && def.scope !== 'public') {
        const needed: readonly Scope[] = typeof def.scope === 'string' ? [def.scope] : def.scope;
        if (!needed.some((scope) => grants(principal.scopes, scope))) {
          const list = needed.join('` or `');
          throw new ServiceError('FORBIDDEN', `This token lacks the \`${list}\` scope.`, {
            details: { requiredScope: needed.join(' or ') },
          });
        }
      }
      const execute = async (body: Buffer | null, bodyStream: BodyStream | null): Promise<EdgeResponse> => {
        try {
          let parsed: unknown = null;
          if (def.body) parsed = checkBody(def.body, parseJsonBody(body, head.headers['content-type']));
          // Field by field: a spread that adds `body` is V8's slow clone, which also promotes the copy.
          const req: EdgeRequest = {
            method: head.method,
            path: head.path,
            query: head.query,
            headers: head.headers,
            body,
            peer: head.peer,
          };
          const result = await def.handle({ req, requestId, principal, params, body: parsed, bodyStream, onAbort });
          return respond(head, requestId, started, routeName, result);
        } catch (err) {
          return respondError(head, requestId, started, routeName, err);
        }
      };
      const mode = def.rawBody?.(head) ?? (def.body ? 'buffer' : null);
      return {
        requestId,
        bodyLimit: mode === 'stream' ? deps.multipartBodyLimit() : mode === null ? null : deps.jsonBodyLimit(),
        streamBody: mode === 'stream',
        sharedBody: mode === 'shared',
        holdConnection: !READS.has(head.method) && def.scope !== 'inference',
        run: (body) => execute(body, null),
        runStream: (stream) => execute(null, stream),
        fail: (err) => respondError(head, requestId, started, routeName, err),
        abort,
      };
    } catch (err) {
      const refused =
        err instanceof URIError
          ? new ServiceError('INVALID_REQUEST', 'The path has a malformed percent-encoding.')
          : err;
      return immediate(respondError(head, requestId, started, routeName, refused));
    }
  }

  /**
   * A WebSocket upgrade of `GET <path>` (a socket route's): the Host check, the Origin check (a browser opens a
   * WebSocket to any origin without a preflight, so a page's Origin must be one CORS allows), the token and
   * `scope`. Logged as a request answered 101 when accepted; refused with the error envelope otherwise.
   */
  function acceptSocket(head: EdgeRequestHead, scope: Scope): { principal: Principal } | EdgeResponse {
    const requestId = newRequestId();
    const started = performance.now();
    const routeName = `GET ${head.path.slice(0, 200)} (WebSocket)`;
    try {
      if (!deps.listener.networkExposed && !hostAllowed(head.headers['host'], deps.listener.host))
        throw new ServiceError(
          'FORBIDDEN',
          'The Host header must name this machine (localhost or a loopback address).',
        );
      const origin = head.headers['origin'];
      if (origin !== undefined && !deps.cors().allows(origin))
        throw new ServiceError('FORBIDDEN', 'This origin is not allowed (see cors.allowedOrigins).');
      const principal = authenticate(head);
      if (!grants(principal.scopes, scope))
        throw new ServiceError('FORBIDDEN', `This token lacks the \`${scope}\` scope.`, {
          details: { requiredScope: scope },
        });
      afterAnswers(() => {
        access.request(requestId, 'GET', routeName, 101, null, Math.round((performance.now() - started) * 1000) / 1000);
        observe?.answered(routeName, 'GET', 101, 0);
      });
      return { principal };
    } catch (err) {
      return respondError(head, requestId, started, routeName, err);
    }
  }

  /** An answer to a request refused before routing (its framing cannot be trusted): no route runs. */
  function refuse(head: EdgeRequestHead, err: ServiceError): EdgeResponse {
    return respondError(head, newRequestId(), performance.now(), 'unmatched', err);
  }

  /** The whole request at once: what tests and in-process callers use. */
  async function handle(req: EdgeRequest): Promise<EdgeResponse> {
    const prepared = prepare(req);
    if (prepared.bodyLimit !== null && req.body !== null && req.body.length > prepared.bodyLimit) {
      return prepared.fail(tooLarge(prepared.bodyLimit));
    }
    return prepared.run(req.body);
  }

  return { prepare, refuse, handle, acceptSocket };
}

export function tooLarge(limit: number): ServiceError {
  return new ServiceError('PAYLOAD_TOO_LARGE', `The request body is larger than the ${limit}-byte limit.`, {
    details: { limitBytes: limit },
  });
}

export function overloaded(what: string): ServiceError {
  return new ServiceError('OVERLOADED', `The service is holding as many ${what} as it may; retry shortly.`, {
    headers: { 'retry-after': '1' },
  });
}

export type App = ReturnType<typeof createApp>;
