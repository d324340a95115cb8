import { startRelay, type RelayCall } from './relay-response.ts';
import { admitCall, type CallAsk, type Reservation } from './admission.ts';
import { callFollower, type Followed } from './follow.ts';
import { keyedCalls, type JsonStart } from './keyed-call.ts';
import { relayRequest } from './request.ts';
import { observeFailure } from './smart-route.ts';
import type { RouteContext, RouteResult } from '../http/router.ts';
import type { GatewayDeps } from './deps.ts';

// What every gateway route does with a call (routes.ts, json-op.ts, route-pack.ts): reserve its worst case under
// the limits, start it (a call that cannot start gives its reservation back), and follow it to its end.

export interface CallKit {
  /** Reserves the call's worst case under the limits that apply (admitCall); null when none does. */
  admit(ctx: RouteContext<unknown>, ask: CallAsk): Reservation | null;
  release(reservation: Reservation): void;
  /** Starts a call under its reservation; a call that cannot start gives the reservation back. */
  under<T>(reservation: Reservation | null, start: () => T): T;
  /** One call from start to end: admitted under `ask`, started by `start`, followed. */
  run(
    ctx: RouteContext<unknown>,
    ask: CallAsk,
    start: () => RelayCall,
    followed: Omit<Followed, 'op' | 'reservation'>,
  ): Promise<RouteResult>;
  /** A JSON call to a resolved model, its answer's head observed by Smart Route and the key pool. */
  startJson(ctx: RouteContext<unknown>, start: JsonStart): RelayCall;
  follow: ReturnType<typeof callFollower>['follow'];
  hooks: ReturnType<typeof callFollower>['hooks'];
  /** Begins the request log's capture of a call (a no-op while the log is off for its token): before its body goes. */
  capture: ReturnType<typeof callFollower>['capture'];
  callbackFailed: ReturnType<typeof callFollower>['callbackFailed'];
  /** The key pool's calls, for providers with several keys; null without a pool. */
  keyed: ReturnType<typeof keyedCalls> | null;
}

export function createCallKit(deps: GatewayDeps): CallKit {
  const { follow, callbackFailed, hooks, capture } = callFollower(deps);
  const admit: CallKit['admit'] = (ctx, ask) =>
    deps.admission === undefined ? null : admitCall(deps.admission, ctx, ask);
  const release = (reservation: Reservation) => deps.admission!.release(reservation);
  const keyed =
    deps.keyPool === undefined
      ? null
      : keyedCalls({
          keyPool: deps.keyPool,
          log: deps.log,
          admit,
          release,
          startJson: (ctx, start) => startJson(ctx, start),
          follow,
          rejectCredential: deps.rejectCredential,
        });

  return {
    admit,
    release,
    under,
    run(ctx, ask, start, followed) {
      const reservation = admit(ctx, ask);
      const call = under(reservation, start);
      return follow(ctx, call, { ...followed, op: ask.op, reservation });
    },
    startJson,
    follow,
    hooks,
    capture,
    callbackFailed,
    keyed,
  };

  function under<T>(reservation: Reservation | null, start: () => T): T {
    if (reservation === null) return start();
    try {
      return start();
    } catch (err) {
      release(reservation);
      throw err;
    }
  }

  function startJson(ctx: RouteContext<unknown>, { op, resolved, clientModel, body, key }: JsonStart): RelayCall {
    const { smart, keyPool } = deps;
    const modelId = resolved.model.id;
    const startedAt = performance.now();
    const keyId = key?.id ?? null;
    const call = startRelay(
      deps.pool,
      relayRequest(ctx, op, resolved, clientModel, body, key),
      hooks(ctx, resolved.provider.id, (_status, headers) => {
        smart?.capacity.observeHeaders(modelId, headers);
        smart?.latency.observe(modelId, performance.now() - startedAt);
        if (keyId !== null) keyPool?.observe(keyId, headers);
      }),
    );
    if (smart) {
      call.result
        .catch((err: unknown) => observeFailure(smart.capacity, modelId, err))
        .catch((err: unknown) => callbackFailed('observeFailure', err, ctx.requestId));
    }
    return call;
  }
}
