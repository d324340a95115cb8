import { tooLarge, type App } from '../http/app.ts';
import type { EdgeRequestHead, InflightCounter, SocketPeer, SocketRoute, SocketSession } from '../http/types.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { parseJsonBody } from '../http/json-body.ts';
import { createCallRunner } from './responses-socket-call.ts';
import { errorFrame, serviceErrorFrame } from './responses-socket-frames.ts';
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
  let calls = 0;
  let closed = false;
  const send = (text: string) => closed || peer.send(text);
  const runner = createCallRunner({ app: deps.app, headers, upgrade, send, continuations, now, closed: () => closed });

  function refuseAndClose(frame: string, code: number, reason: string): void {
    send(frame);
    closed = true;
    peer.close(code, reason);
  }

  /** A refusal the connection answers before a call is queued, or null when the call may queue. */
  function refusal(lane: string): [frame: string, close?: number, reason?: string] | null {
    if (deps.isDraining()) {
      const frame = serviceErrorFrame(new ServiceError('OVERLOADED', 'The service is shutting down.'), lane);
      return [frame, 1001, 'The service is shutting down.'];
    }
    if (now() - openedAt >= maxAge) {
      const message = 'This connection has reached its 60-minute limit; open a new one.';
      const error = { type: 'invalid_request_error', code: 'websocket_connection_limit_reached', message, param: null };
      return [errorFrame(400, error, lane), 1000, 'Connection limit reached.'];
    }
    if (calls < MAX_CALLS && (lanes.has(lane) || lanes.size < MAX_LANES)) return null;
    const message = `At most ${MAX_CALLS} calls in ${MAX_LANES} lanes are queued or running on one connection.`;
    return [
      errorFrame(
        400,
        { type: 'invalid_request_error', code: 'websocket_stream_limit_reached', message, param: null },
        lane,
      ),
    ];
  }

  function message(data: Buffer, isBinary: boolean): void {
    if (closed) return;
    const limit = deps.maxMessageBytes();
    if (data.length > limit) return refuseAndClose(serviceErrorFrame(tooLarge(limit), ''), 1009, 'Message too big.');
    const read = readCreate(data, isBinary);
    if ('frame' in read) return void send(read.frame);
    const { create, lane } = read;
    const refused = refusal(lane);
    if (refused !== null) {
      const [frame, code, reason] = refused;
      return code === undefined ? void send(frame) : refuseAndClose(frame, code, reason!);
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
        await runner.run(call.lane, call.create);
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

  return {
    message,
    drained: () => runner.drained(),
    closed() {
      closed = true;
      for (const lane of lanes.values()) {
        calls -= lane.queue.length;
        lane.queue = [];
      }
      runner.clientLeft();
      continuations.clear();
    },
  };
}

/** A message as a call, or the error message refusing it. */
function readCreate(
  data: Buffer,
  isBinary: boolean,
): { create: Record<string, unknown>; lane: string } | { frame: string } {
  if (isBinary) return { frame: serviceErrorFrame(invalid('Messages are JSON text; this one was binary.'), '') };
  let lane = '';
  try {
    const value = parseJsonBody(data, 'application/json');
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new ServiceError('INVALID_JSON', 'A message is one JSON object.');
    const create = value as Record<string, unknown>;
    if (typeof create.stream_id === 'string') lane = create.stream_id.slice(0, LANE_ID_MAX);
    checkCreate(create);
    return { create, lane };
  } catch (err) {
    return { frame: serviceErrorFrame(err, lane) };
  }
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
