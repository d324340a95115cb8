import type { Logger } from 'pino';
import { redactSecrets } from '../../protocol/redact.ts';
import { RESPONSE_ID_MAX_BYTES } from '../../protocol/ids.ts';
import type { GatewayOp, UsageEvent, UsageRoute } from '../../protocol/gateway.ts';
import type { ResponseRouteRepo } from '../../store/response-route-repo.ts';
import { afterAnswers } from '../http/after-answers.ts';
import { createAccessLogger } from '../http/log.ts';
import type { RouteContext, RouteResult } from '../http/router.ts';
import type { RelayCall, RelayHooks, RelayOutcome } from './relay-response.ts';
import type { Admission, Reservation } from './admission.ts';
import { affinitySession } from './affinity-session.ts';
import type { RequestLogSink } from '../../protocol/ports/request-log.ts';
import { requestCaptures } from './request-capture.ts';

const noMember = () => undefined;

// What the gateway does around each relayed call (routes.ts): its hooks while it runs, and at its end the
// reservation settled, a created response remembered, the usage line and the usage event.

export interface FollowDeps {
  log: Logger;
  responses: ResponseRouteRepo;
  admission?: Admission;
  /** Meters a call's usage (and journals it): told before the answer's last bytes. */
  meterUsage?(event: UsageEvent): void;
  /** The rest of a call's bookkeeping (metrics, activity): after this turn's answers are written. */
  recordUsage?(event: UsageEvent): void;
  /** The request log, opt in (docs/api.md, Request log); each thread writes its calls' entries itself. */
  requestLog?: RequestLogSink;
}

/** What a followed call is: its operation, where it went, and what it holds. */
export interface Followed {
  op: GatewayOp;
  providerId: string;
  /** Null for calls addressed by response ID. */
  modelId: string | null;
  route?: UsageRoute;
  reservation?: Reservation | null;
  /** The provider key it used, where the provider holds keys. */
  credentialId?: string | null;
  /** When the relay started, for a caller that awaited its head before following it (key and route retries). */
  startedAt?: number;
}

/** A followed call's usage event, once its outcome is known. */
function usageEventOf(
  ctx: RouteContext<unknown>,
  { op, providerId, modelId, route, credentialId = null }: Followed,
  o: RelayOutcome,
  t: { at: number; startedAt: number; firstByteAt: number; session: string | null },
): UsageEvent {
  return {
    kind: 'usage',
    requestId: ctx.requestId,
    at: t.at,
    tokenId: ctx.principal!.tokenId,
    providerId,
    modelId,
    op,
    outcome: o.outcome,
    usage: o.usage,
    ...(route && { route }),
    ...(o.acceleration && { acceleration: o.acceleration }),
    ...(credentialId !== null && { credentialId }),
    startedAt: t.startedAt,
    ...(t.firstByteAt > 0 && { firstByteAt: t.firstByteAt }),
    ...(t.session !== null && { session: t.session }),
  };
}

export function callFollower(deps: FollowDeps) {
  const { log, responses } = deps;
  const access = createAccessLogger(log);
  const captures = requestCaptures(deps.requestLog);

  /** Reports the call's outcome once it is over; remembers which provider holds a created response. */
  function follow(ctx: RouteContext<unknown>, call: RelayCall, followed: Followed): Promise<RouteResult> {
    const { op, providerId, modelId, route } = followed;
    const reservation = followed.reservation ?? null;
    const credentialId = followed.credentialId ?? null;
    const startedAt = followed.startedAt ?? Date.now();
    let firstByteAt = 0;
    call.result.then(
      () => void (firstByteAt = Date.now()),
      () => undefined,
    );
    const session = affinitySession(ctx.req.headers, noMember);
    const eventOf = (o: RelayOutcome): UsageEvent => {
      const at = Date.now();
      // A whole answer's head and body come together at its end: told before `result`'s callback has run.
      if (firstByteAt === 0 && o.outcome === 'ok') firstByteAt = at;
      return usageEventOf(ctx, followed, o, { at, startedAt, firstByteAt, session });
    };
    let event: UsageEvent | null = null;
    // The reservation settles and the usage is metered (both journaled) before the answer's last bytes go out:
    // a kill -9 once the client has its whole answer loses neither (docs/api.md, Limits; Usage).
    call.onOutcome((o) => {
      // Before the last bytes too: a client with its response can name it at once, on any thread (docs/api.md).
      if (o.responseId !== null && (op === 'responses.create' || op === 'responses.compact'))
        remember(ctx, o.responseId, providerId);
      event = eventOf(o);
      let failure: unknown = null;
      if (reservation !== null) {
        try {
          deps.admission!.settle(reservation, o.usage, modelId);
        } catch (err) {
          // Its room must come back whatever went wrong: a reservation held for good would shrink the limit.
          deps.admission!.release(reservation);
          failure = err;
        }
      }
      deps.meterUsage?.(event);
      if (failure !== null) throw failure;
    });
    call.done
      .then((o) => {
        // The usage line and the rest of the bookkeeping wait until this turn's answers are written.
        afterAnswers(() => {
          // Told before `done` resolves (relay-response.ts finish), so the event is there.
          const settled = event ?? eventOf(o);
          access.usage({
            reqId: ctx.requestId,
            op,
            providerId,
            modelId,
            outcome: o.outcome,
            usage: o.usage,
            route,
            credentialId,
          });
          deps.recordUsage?.(settled);
          // Decoding and redacting the bodies wait here too: the client has its answer.
          try {
            captures.end(ctx, settled);
          } catch (err) {
            callbackFailed('requestLog', err, ctx.requestId);
          }
        });
      })
      .catch((err: unknown) => callbackFailed('done', err, ctx.requestId));
    return call.result;
  }

  /**
   * Bookkeeping after (or beside) an answer that failed: logged under the request ID, redacted, and never
   * thrown on, since the client's answer does not depend on it and nothing above would catch it (W2.6).
   */
  function callbackFailed(callback: string, err: unknown, requestId: string): void {
    const cause =
      err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : { message: String(err) };
    log.error(
      {
        reqId: requestId,
        callback,
        err: { ...cause, message: redactSecrets(cause.message), stack: cause.stack && redactSecrets(cause.stack) },
      },
      'relay callback failed',
    );
  }

  function remember(ctx: RouteContext<unknown>, responseId: string, providerId: string): void {
    // An ID no client can name in a path (over RESPONSE_ID_MAX_BYTES, answered 400) is not worth a key.
    if (responseId.length > RESPONSE_ID_MAX_BYTES || Buffer.byteLength(responseId) > RESPONSE_ID_MAX_BYTES) return;
    responses
      .remember(responseId, providerId)
      .catch((err: unknown) => callbackFailed('onResponseId', err, ctx.requestId));
  }

  // One literal, onHead included: a spread of these hooks plus onHead would be V8's slow clone (PROFILE.md).
  const hooks = (ctx: RouteContext<unknown>, providerId: string, onHead?: RelayHooks['onHead']): RelayHooks => ({
    onAbort: ctx.onAbort,
    onResponseId: (responseId) => remember(ctx, responseId, providerId),
    onHead,
    onHookError: callbackFailed,
    capture: captures.of(ctx),
  });

  return { follow, callbackFailed, hooks, capture: captures.of };
}
