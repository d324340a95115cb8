import { Agent, type Dispatcher } from 'undici';
import { ServiceError, toServiceError } from '../../protocol/errors.ts';
import { GATEWAY_OPS } from '../../protocol/gateway.ts';
import type { RelayRequest } from '../../protocol/relay.ts';
import { isSharedBody, type WorkerArena } from '../shared/body-arena.ts';
import { credentialOf, knownCredential } from './credentials.ts';
import { ADAPTERS } from './providers/index.ts';
import { scrubTarget } from './scrub.ts';
import { fromTransportError, type UpstreamContext } from '../shared/upstream-errors.ts';
import { translatedFor } from './translate-glue.ts';
import type { RelayControl } from './relay-control.ts';
import { Exchange } from './exchange.ts';
import { upstreamRequest, type Post } from './upstream-request.ts';
import { withArticle } from '../../protocol/words.ts';

// One relayed call, inside a proxy worker: build the upstream request, send it with undici, and hand the
// answer to the edge as messages. A non-streamed answer travels as one message; a stream as chunks, each
// posted as it is read (the worker's outbox sends a turn's messages together and merges a call's chunks),
// paused while the client's socket is full. The answer is read through
// undici's dispatch handler, not request(): no body stream, no abort signal and no promise per chunk.

export type { Post } from './upstream-request.ts';

const agents = new Map<number, Agent>();
function agentFor(connectMs: number): Dispatcher {
  let agent = agents.get(connectMs);
  if (!agent) {
    // No per-origin connection cap: many agents streaming at once each hold one upstream connection.
    agent = new Agent({ connect: { timeout: connectMs }, keepAliveTimeout: 30_000 });
    agents.set(connectMs, agent);
  }
  return agent;
}

/**
 * Relays one call. `ended` is called once, after the call's last message was posted. Callbacks, not
 * promises, carry the call from the edge's message to undici and back (see Exchange).
 */
export function relay(
  id: number,
  req: RelayRequest,
  control: RelayControl,
  post: Post,
  arena: WorkerArena | undefined,
  ended: () => void,
): void {
  const gateway = ADAPTERS[req.target.kind].gateway;
  let exchange: Exchange | null = null;
  let context: UpstreamContext = { providerId: req.target.id, credential: null };
  // A body in the arena: its slot is freed once, when undici is done with it or when the call ends without it.
  let slotHeld = isSharedBody(req.body) ? req.body.shared : null;
  const freeSlot = (): void => {
    if (slotHeld === null) return;
    post({ t: 'free', slot: slotHeld });
    slotHeld = null;
  };
  let over = false;
  /** The call is over: with nothing when the answer was posted, else the error (or the edge's stop) is. */
  const end = (err?: unknown): void => {
    if (over) return;
    over = true;
    if (control.aborted) {
      // The edge stopped the call (the client left): the last message carries the usage reported so far.
      post({ t: 'aborted', id, usage: exchange?.usageSoFar() ?? null });
    } else if (err !== undefined) {
      const error = toServiceError(
        err instanceof Error && !(err instanceof ServiceError) ? (fromTransportError(err, context) ?? err) : err,
      );
      post({ t: 'error', id, error: error.toPayload(), usage: exchange?.usageSoFar() ?? null });
    }
    // The call is over and undici never asked for the body, or gave up on it with the socket destroyed.
    freeSlot();
    ended();
  };
  const translated = translatedFor(req, gateway);
  let url: string | null;
  try {
    url = gateway?.url(translated?.upstreamOp ?? req.op, req.target, req.params, req.query) ?? null;
  } catch (err) {
    // A query parameter the client spelled wrong (providers/query.ts).
    end(err);
    return;
  }
  if (gateway === null || url === null) {
    end(
      new ServiceError(
        'MODEL_ENDPOINT_NOT_SUPPORTED',
        `${withArticle(req.target.kind, true)} provider does not serve ${GATEWAY_OPS[req.op].path}.`,
        { param: 'model' },
      ),
    );
    return;
  }
  const send = (credential: string | null): void => {
    try {
      context = { providerId: req.target.id, credential };
      const request = upstreamRequest({
        id,
        req,
        url,
        credential,
        control,
        post,
        arena,
        freeSlot,
        streamUsage: gateway.streamUsage,
        translated,
      });
      if (control.aborted) return end();
      const started = new Exchange({
        id,
        req,
        control,
        post,
        context,
        secret: scrubTarget(credential),
        injected: request.injected,
        gateway,
        settled: end,
        translated,
      });
      exchange = started;
      control.whenStopped((reason) => started.fail(reason));
      agentFor(req.target.timeouts.connectMs).dispatch(request.options, started);
    } catch (err) {
      end(err);
    }
  };
  // A credential read before needs no wait; the first call of a reference reads the vault.
  const known = knownCredential(req.credentialRef);
  if (known !== undefined) send(known);
  else credentialOf(req.credentialRef).then(send, end);
}
