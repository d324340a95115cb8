import type { Logger } from 'pino';
import { ServiceError } from '../../protocol/errors.ts';
import type { RequestObserver } from '../../protocol/metrics.ts';
import type { TokenAuthPort } from '../../protocol/ports/tokens.ts';
import { grants, type Scope } from '../../protocol/scopes.ts';
import { checkBody } from '../../protocol/validate.ts';
import type { createAnswers } from './answers.ts';
import { hostAllowed } from './host-check.ts';
import { parseJsonBody } from './json-body.ts';
import { newRequestId } from './request-id.ts';
import type { createRouter, RouteDef } from './router.ts';
import type { CorsPolicy } from './cors.ts';
import type { BodyStream, EdgeRequest, EdgeRequestHead, EdgeResponse, Principal } from './types.ts';

// One request's way through the edge's core (app.ts) once its head is read: the Host check, a CORS preflight,
// the route, the token and its scope, then the body's parse and the route's answer.

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

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

const _READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface PrepareContext {
  deps: AppDeps;
  router: ReturnType<typeof createRouter>;
  authenticate(head: EdgeRequestHead): Principal;
  answers: ReturnType<typeof createAnswers>;
}

export function createPrepare({ deps, router, authenticate, answers }: PrepareContext) {
  const { respond, respondError, finish } = answers;
  return prepare;

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
}
