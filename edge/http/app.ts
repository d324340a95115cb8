import { ServiceError } from '../../protocol/errors.ts';
import { grants, type Scope } from '../../protocol/scopes.ts';
import { afterAnswers } from './after-answers.ts';
import { extractToken } from './auth.ts';
import { hostAllowed } from './host-check.ts';
import { createAccessLogger } from './log.ts';
import { newRequestId } from './request-id.ts';
import { createRouter } from './router.ts';
import { createAnswers } from './answers.ts';
import { createPrepare, type AppDeps } from './prepare.ts';
import type { EdgeRequest, EdgeRequestHead, EdgeResponse, Principal } from './types.ts';

// The core of the edge: host check, CORS, routing, auth, body parsing, errors and the request log line.
// No socket here; server.ts adapts uWebSockets.js to `prepare` and `run`.

export type { AppDeps, Prepared } from './prepare.ts';

export function createApp(deps: AppDeps) {
  const router = createRouter(deps.routes);
  const { log } = deps;
  const access = createAccessLogger(log);
  const observe = deps.observe;

  const answers = createAnswers({ log, access, observe, cors: deps.cors, isDraining: deps.isDraining });
  const { respondError } = answers;

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

  const prepare = createPrepare({ deps, router, authenticate, answers });

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
