import { tooLarge, type App } from '../http/app.ts';
import type {
  EdgeRequestHead,
  EdgeResponse,
  InflightCounter,
  SocketPeer,
  SocketRoute,
  SocketSession,
} from '../http/types.ts';
import { ServiceError, errorEnvelope } from '../../protocol/errors.ts';
import { newRequestId } from '../http/request-id.ts';
import { parseJsonBody } from '../http/json-body.ts';
import { createTurnWriter, type TurnEnd, type TurnWriter } from './responses-socket-turn.ts';
import { prewarmEvents } from './responses-socket-prewarm.ts';
import { createContinuations } from './responses-socket-state.ts';

// The Responses API over a WebSocket on GET /v1/responses (OpenAI's WebSocket mode; docs/api.md, Responses over
// a WebSocket). Each `response.create` message is one gateway call, run through the same route as POST
// /v1/responses with the upgrade's headers (auth, admission, limits, metering and the request log apply per
// call, as over HTTP), and its stream's events are sent back as text messages. Calls of one lane (`stream_id`)
// run one after another; lanes run side by side. The latest response of each lane is kept on the connection,
// so a call may name it in `previous_response_id` and send only its new input (also with `store: false`, and to
// a model reached through a translation, which keeps no responses).

/** Calls queued or running on one connection, and lanes, at most (OpenAI's limits). */
const MAX_CALLS = 16;
const MAX_LANES = 32;
/** A connection takes calls for this long, then refuses the next (OpenAI's 60 minutes). */
const MAX_AGE_MS = 60 * 60 * 1000;
const LANE_ID_MAX = 64;
/** Headers of the upgrade that are the connection's, not a call's. */
const SOCKET_HEADERS = /^(?:connection|upgrade|sec-websocket-.*|content-length|transfer-encoding)$/;

export interface ResponsesSocketDeps {
  app: Pick<App, 'prepare' | 'acceptSocket'>;
  /** The JSON body limit, read per connection: a larger message closes it with 1009. */
  maxMessageBytes(): number;
  /** Whether the service is draining: a call then is refused, and the connection closed. */
  isDraining(): boolean;
  now?(): number;
  maxAgeMs?: number;
}

interface Call {
  lane: string;
  create: Record<string, unknown>;
}

interface Lane {
  queue: Call[];
  running: boolean;
}

/** An error message as OpenAI's WebSocket mode sends one: the HTTP status beside the error object. */
function errorFrame(status: number, error: Record<string, unknown>, lane: string, requestId?: string): string {
  return JSON.stringify({
    type: 'error',
    status,
    error,
    ...(requestId !== undefined && { request_id: requestId }),
    ...(lane !== '' && { stream_id: lane }),
  });
}

function serviceErrorFrame(err: unknown, lane: string): string {
  const error =
    err instanceof ServiceError ? err : new ServiceError('INVALID_REQUEST', 'The message could not be read.');
  const requestId = newRequestId();
  return errorFrame(error.status, errorEnvelope(error, requestId).error as Record<string, unknown>, lane, requestId);
}

export function responsesSocketRoute(deps: ResponsesSocketDeps): SocketRoute {
  return {
    path: '/v1/responses',
    get maxMessageBytes() {
      return deps.maxMessageBytes();
    },
    accept(head) {
      const accepted = deps.app.acceptSocket(head, 'inference');
      if (!('principal' in accepted)) return accepted;
      return { open: (peer, inflight) => openSession(deps, head, peer, inflight) };
    },
  };
}

function openSession(
  deps: ResponsesSocketDeps,
  upgrade: EdgeRequestHead,
  peer: SocketPeer,
  inflight: InflightCounter,
): SocketSession {
  const now = deps.now ?? Date.now;
  const openedAt = now();
  const maxAge = deps.maxAgeMs ?? MAX_AGE_MS;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  for (const name in upgrade.headers) if (!SOCKET_HEADERS.test(name)) headers[name] = upgrade.headers[name]!;
  const lanes = new Map<string, Lane>();
  const continuations = createContinuations();
  /** Writers of calls whose stream is under way: told when the client's buffer drains, or the client leaves. */
  const writers = new Set<TurnWriter>();
  /** The calls under way, to be told when the client leaves before their answer has begun. */
  const aborts = new Set<() => void>();
  let calls = 0;
  let closed = false;

  const send = (text: string) => closed || peer.send(text);

  function refuseAndClose(frame: string, code: number, reason: string): void {
    send(frame);
    closed = true;
    peer.close(code, reason);
  }

  function message(data: Buffer, isBinary: boolean): void {
    if (closed) return;
    const limit = deps.maxMessageBytes();
    if (data.length > limit) return refuseAndClose(serviceErrorFrame(tooLarge(limit), ''), 1009, 'Message too big.');
    if (isBinary) return void send(serviceErrorFrame(invalid('Messages are JSON text; this one was binary.'), ''));
    let create: Record<string, unknown>;
    let lane = '';
    try {
      const value = parseJsonBody(data, 'application/json');
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw new ServiceError('INVALID_JSON', 'A message is one JSON object.');
      create = value as Record<string, unknown>;
      if (typeof create.stream_id === 'string') lane = create.stream_id.slice(0, LANE_ID_MAX);
      checkCreate(create);
    } catch (err) {
      return void send(serviceErrorFrame(err, lane));
    }
    if (deps.isDraining())
      return refuseAndClose(
        serviceErrorFrame(new ServiceError('OVERLOADED', 'The service is shutting down.'), lane),
        1001,
        'The service is shutting down.',
      );
    if (now() - openedAt >= maxAge) {
      const error = {
        type: 'invalid_request_error',
        code: 'websocket_connection_limit_reached',
        message: 'This connection has reached its 60-minute limit; open a new one.',
        param: null,
      };
      return refuseAndClose(errorFrame(400, error, lane), 1000, 'Connection limit reached.');
    }
    if (calls >= MAX_CALLS || (!lanes.has(lane) && lanes.size >= MAX_LANES)) {
      const error = {
        type: 'invalid_request_error',
        code: 'websocket_stream_limit_reached',
        message: `At most ${MAX_CALLS} calls in ${MAX_LANES} lanes are queued or running on one connection.`,
        param: null,
      };
      return void send(errorFrame(400, error, lane));
    }
    let entry = lanes.get(lane);
    if (entry === undefined) lanes.set(lane, (entry = { queue: [], running: false }));
    calls++;
    entry.queue.push({ lane, create });
    if (!entry.running) void runLane(lane, entry);
  }

  async function runLane(name: string, lane: Lane): Promise<void> {
    lane.running = true;
    for (let call = lane.queue.shift(); call !== undefined && !closed; call = lane.queue.shift()) {
      inflight.began();
      try {
        await runCall(call);
      } catch (err) {
        send(serviceErrorFrame(err, call.lane));
      } finally {
        inflight.ended();
        calls--;
      }
    }
    lane.running = false;
    if (lane.queue.length === 0) lanes.delete(name);
  }

  /** One call: its body as POST /v1/responses would take it, run through the app, its answer as messages. */
  async function runCall({ lane, create }: Call): Promise<void> {
    const { type: _type, stream_id: _lane, generate, ...fields } = create;
    const expanded = continuations.expand(fields);
    if ('refusal' in expanded) return void send(errorFrame(expanded.refusal.status, expanded.refusal.error, lane));
    const { body } = expanded;
    const text = JSON.stringify({ ...body, stream: true });
    if (generate === false) {
      for (const event of prewarmEvents(continuations.prewarmed(lane, body, text.length, now()), lane)) send(event);
      return;
    }
    const bytes = Buffer.from(text);
    const prepared = deps.app.prepare({
      method: 'POST',
      path: '/v1/responses',
      query: '',
      headers,
      peer: upgrade.peer,
    });
    aborts.add(prepared.abort);
    try {
      const limit = prepared.bodyLimit;
      const answer =
        limit !== null && bytes.length > limit ? prepared.fail(tooLarge(limit)) : await prepared.run(bytes);
      continuations.settle(lane, body, bytes.length, await deliver(answer, lane));
    } finally {
      aborts.delete(prepared.abort);
    }
  }

  /** Sends an answer: a stream's events as they come, any other answer as one message. */
  function deliver(answer: EdgeResponse, lane: string): Promise<TurnEnd> {
    if (closed) return Promise.resolve({ response: null, failed: true });
    const sse = (answer.headers['content-type'] ?? '').includes('text/event-stream');
    if (answer.stream === undefined && !sse) {
      send(wholeAnswerFrame(answer, lane));
      return Promise.resolve({ response: null, failed: answer.status >= 400 });
    }
    return new Promise((resolve) => {
      const writer = createTurnWriter({
        lane,
        send,
        done(end) {
          writers.delete(writer);
          resolve(end);
        },
      });
      writers.add(writer);
      // A stream whose end came with its head is answered whole, its events in one body.
      if (answer.stream === undefined) writer.end(answer.body);
      else answer.stream(writer);
    });
  }

  return {
    message,
    drained() {
      for (const writer of writers) writer.drained();
    },
    closed() {
      closed = true;
      for (const lane of lanes.values()) {
        calls -= lane.queue.length;
        lane.queue = [];
      }
      for (const writer of [...writers]) writer.clientLeft();
      for (const abort of [...aborts]) abort();
      continuations.clear();
    },
  };
}

const invalid = (message: string, param?: string) => new ServiceError('INVALID_REQUEST', message, { param });

/** What a `response.create` message must be before it becomes a call; the rest is the route's to check. */
function checkCreate(create: Record<string, unknown>): void {
  if (create.type !== 'response.create') throw invalid('The only message a client sends is `response.create`.', 'type');
  if (
    create.stream_id !== undefined &&
    (typeof create.stream_id !== 'string' || create.stream_id.length === 0 || create.stream_id.length > LANE_ID_MAX)
  )
    throw invalid(`\`stream_id\` is a string of 1 to ${LANE_ID_MAX} characters.`, 'stream_id');
  if (create.background !== undefined && create.background !== false)
    throw invalid('`background` is not used over a WebSocket: every response streams on it.', 'background');
  if (create.generate !== undefined && typeof create.generate !== 'boolean')
    throw invalid('`generate` is a boolean.', 'generate');
}

/** An answer that is not a stream (the route refused the call, or answered whole): one message. */
function wholeAnswerFrame(answer: EdgeResponse, lane: string): string {
  const text = typeof answer.body === 'string' ? answer.body : Buffer.from(answer.body).toString('utf8');
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: said as an error below.
  }
  const requestId = answer.headers['x-request-id'];
  if (answer.status >= 400) {
    const error = (parsed as { error?: Record<string, unknown> } | null)?.error ?? { message: text.slice(0, 500) };
    return errorFrame(answer.status, error, lane, requestId);
  }
  return JSON.stringify({ type: 'response.completed', response: parsed, ...(lane !== '' && { stream_id: lane }) });
}
