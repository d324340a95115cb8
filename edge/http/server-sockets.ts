import type { TemplatedApp, WebSocket } from 'uws-pack';
import { writeResponse, type ListenerState } from './answer-writer.ts';
import type { InflightCounter, SocketPeer, SocketRoute, SocketSession } from './types.ts';

// WebSocket routes on uWebSockets.js (server.ts registers them before its HTTP catch-all; server-node-ws.ts gives
// node:http the same shape): the route checks the upgrade's head and answers a refusal as any HTTP answer, and
// each open connection's messages go to its session.

/** A message over this many bytes queued for the client is the connection's end: it could not keep up. */
const MAX_BACKPRESSURE = 64 * 1024 * 1024;
/** uWS pings an idle connection and closes one that answers nothing for this long. */
const IDLE_TIMEOUT_S = 120;
/** uWS's send results. */
const BACKPRESSURE = 0;
const DROPPED = 2;

interface SocketData {
  open: (peer: SocketPeer, inflight: InflightCounter) => SocketSession;
  session: SocketSession | null;
  /** Closed, by either side: uWS throws on any use of a closed WebSocket. */
  gone: boolean;
}

/** The listener's in-flight count, shared with HTTP requests: a drain waits for a socket's work too. */
export function inflightOf(listener: ListenerState): InflightCounter {
  return {
    began: () => void listener.inflight++,
    ended() {
      if (--listener.inflight === 0 && listener.idleWaiters.length > 0) {
        for (const wake of listener.idleWaiters) wake();
        listener.idleWaiters = [];
      }
    },
  };
}

/** The close reason uWS takes: at most 123 bytes. */
const shortReason = (reason: string) => Buffer.from(reason).subarray(0, 123).toString('utf8');

function peerOf(ws: WebSocket<SocketData>): SocketPeer {
  const data = ws.getUserData();
  const end = (code: number, reason: string) => {
    if (data.gone) return;
    data.gone = true;
    ws.end(code, shortReason(reason));
  };
  return {
    send(text) {
      if (data.gone) return true;
      const sent = ws.send(text, false, false);
      if (sent === DROPPED) end(1011, 'The client does not read its messages.');
      return sent !== BACKPRESSURE;
    },
    close: end,
  };
}

export function serveSocket(server: TemplatedApp, route: SocketRoute, listener: ListenerState): void {
  const inflight = inflightOf(listener);
  server.ws<SocketData>(route.path, {
    maxPayloadLength: route.maxMessageBytes * 2,
    maxBackpressure: MAX_BACKPRESSURE,
    idleTimeout: IDLE_TIMEOUT_S,
    sendPingsAutomatically: true,
    upgrade(res, req, context) {
      // HttpRequest is stack-allocated: everything is read before the route decides.
      const headers: Record<string, string> = {};
      req.forEach((name, value) => {
        headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
      });
      const head = {
        method: 'GET',
        path: req.getUrl(),
        query: req.getQuery() ?? '',
        headers,
        peer: Buffer.from(res.getRemoteAddressAsText()).toString('latin1'),
      };
      const accepted = route.accept(head);
      if (!('open' in accepted)) return writeResponse(res, accepted, 'close', false);
      const data: SocketData = { open: accepted.open, session: null, gone: false };
      res.upgrade(
        data,
        headers['sec-websocket-key'] ?? '',
        headers['sec-websocket-protocol'] ?? '',
        // No extension is taken (permessage-deflate is offered by some clients): compression is off.
        '',
        context,
      );
    },
    open(ws) {
      const data = ws.getUserData();
      data.session = data.open(peerOf(ws), inflight);
    },
    message(ws, message, isBinary) {
      // The message's memory is uWS's only during this call.
      ws.getUserData().session?.message(Buffer.from(new Uint8Array(message)), isBinary);
    },
    drain(ws) {
      ws.getUserData().session?.drained();
    },
    close(ws) {
      const data = ws.getUserData();
      data.gone = true;
      const session = data.session;
      data.session = null;
      session?.closed();
    },
  });
}
