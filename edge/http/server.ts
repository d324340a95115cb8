import type { TemplatedApp, us_listen_socket } from 'uws-pack';
import { ServiceError } from '../../protocol/errors.ts';
import { afterAnswers } from './after-answers.ts';
import { tooLarge, type App } from './app.ts';
import { EdgeExchange, writeResponse, type ListenerState } from './answer-writer.ts';
import type { BodyBudget } from './body-budget.ts';
import { BODY_PACE, type BodyPace } from './body-pace.ts';
import { readStreamed, readWhole } from './body-reader.ts';
import { declaredLength } from './framing.ts';
import type { BodyArena } from '../../workers/shared/body-arena.ts';
import type { Uws } from './uws-load.ts';
import { serveSocket } from './server-sockets.ts';
import type { SocketRoute } from './types.ts';

// With body-reader.ts and answer-writer.ts, the only file that drives uWebSockets.js (uws-load.ts loads it):
// it turns sockets into `EdgeRequestHead`s and `EdgeResponse`s into bytes. Here a request's head is read
// and its route chosen; body-reader.ts reads its body and answer-writer.ts (EdgeExchange) answers it.
// Everything else in edge/ is plain functions. Where no native build loads, server-node.ts gives it
// node:http in uWS's shape, so these rules hold on both edges.

// uWS's ListenOptions value (a const enum in its typings, so not importable as a value).
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

export interface Listening {
  port: number;
  /** Stops accepting new connections; requests on open connections are still answered. */
  stopListening(): void;
  /**
   * Stops listening and closes every connection, idle keep-alive ones included (after the drain): an edge thread
   * may stop only once it holds none (open-connections.ts).
   */
  closeConnections(): void;
  inflight(): number;
  /** Resolves once no request is in flight. */
  idle(): Promise<void>;
}

/** Stops accepting, then waits for the requests in flight, `drainMs` at most; how many are still running then. */
export async function drain(listening: Listening, drainMs: number): Promise<number> {
  listening.stopListening();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([listening.idle(), new Promise((r) => (timer = setTimeout(r, drainMs)))]);
  clearTimeout(timer);
  return listening.inflight();
}

export interface ListenOptions {
  /** Where a route that takes shared bodies gets a large one read (see workers/shared/body-arena.ts). */
  arena?: BodyArena;
  /** Request-body bytes held at once across connections (edge/http/body-budget.ts); unbounded without it. */
  bodyBudget?: BodyBudget;
  /** How slowly a body may arrive (body-pace.ts); tests shorten it. */
  bodyPace?: BodyPace;
  /**
   * Listen with SO_REUSEPORT, beside the service's other edge threads on the same port (the kernel spreads
   * connections between them). Only with several edge threads: alone, the listener takes the port exclusively.
   */
  shared?: boolean;
  /** WebSocket routes (GET with an upgrade), served before the HTTP routes see the request. */
  sockets?: readonly SocketRoute[];
}

export function listen(
  uws: Uws,
  app: Pick<App, 'prepare' | 'refuse'>,
  host: string,
  port: number,
  options: ListenOptions = {},
): Promise<Listening> {
  const { arena, bodyBudget, bodyPace = BODY_PACE, shared = false, sockets = [] } = options;
  const server: TemplatedApp = uws.App();
  const listener: ListenerState = { inflight: 0, idleWaiters: [], arena, bodyBudget };
  for (const route of sockets) serveSocket(server, route, listener);

  server.any('/*', (res, req) => {
    const headAt = performance.now();
    // HttpRequest is stack-allocated: read everything from it before the first await.
    const headers: Record<string, string> = {};
    req.forEach((name, value) => {
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    });
    const head = {
      method: req.getCaseSensitiveMethod().toUpperCase(),
      path: req.getUrl(),
      query: req.getQuery() ?? '',
      headers,
      // Read here, while the response is surely open: pairing admits loopback peers only.
      peer: Buffer.from(res.getRemoteAddressAsText()).toString('latin1'),
    };
    const declared = declaredLength(headers['content-length']);
    const chunked = headers['transfer-encoding'] !== undefined;
    if (Number.isNaN(declared) || (chunked && declared !== null)) {
      // Framing the client and uWS may disagree on: nothing after this head can be trusted, and no route runs.
      const refusal = app.refuse(
        head,
        new ServiceError(
          'INVALID_REQUEST',
          'Content-Length must be one decimal length, and not sent with Transfer-Encoding.',
        ),
      );
      // Answered now, the request would leave uWS parsing the bytes after its first length as the next
      // request, and running it (smuggling). Unanswered, a request parsed behind it makes uWS close the
      // connection without dispatching it; the refusal goes out once this read is parsed, and closes.
      let gone = false;
      res.onAborted(() => (gone = true));
      afterAnswers(() => gone || writeResponse(res, refusal, 'close', false));
      return;
    }
    const ex = new EdgeExchange(res, listener, head.method, declared, bodyPace, headAt);
    res.onAborted(() => ex.abort());
    listener.inflight++;
    const prepared = (ex.prepared = app.prepare(head));
    const hasBody = (declared !== null && declared > 0) || chunked;

    const limit = prepared.bodyLimit;
    if (limit === null) {
      // A body nobody reads is discarded by uWS as it arrives; the answer waits for nothing.
      ex.begin(() => void ex.sendLater(prepared.run(null), false, hasBody));
    } else if (declared !== null && declared > limit) {
      ex.running = true;
      ex.send(prepared.fail(tooLarge(limit)), true);
    } else if (prepared.streamBody) readStreamed(ex, limit, hasBody);
    else if (!hasBody) ex.begin(() => void ex.sendLater(prepared.run(null), false));
    else readWhole(ex, limit, chunked);
  });

  return new Promise((resolve, reject) => {
    // Exclusively: uWS sets SO_REUSEPORT by default, and a second service on the same port would then also
    // listen, with the kernel splitting connections between the two.
    const listenExclusive = server.listen as unknown as (
      host: string,
      port: number,
      options: number,
      cb: (socket: us_listen_socket | false) => void,
    ) => void;
    const flags = shared ? 0 : LIBUS_LISTEN_EXCLUSIVE_PORT;
    listenExclusive.call(server, host, port, flags, (socket: us_listen_socket | false) => {
      if (!socket) {
        reject(new Error(`cannot listen on ${host}:${port} (in use or not permitted)`));
        return;
      }
      let open = true;
      resolve({
        port: uws.us_socket_local_port(socket),
        stopListening() {
          if (open) uws.us_listen_socket_close(socket);
          open = false;
        },
        closeConnections() {
          open = false;
          server.close();
        },
        inflight: () => listener.inflight,
        idle: () =>
          listener.inflight === 0 ? Promise.resolve() : new Promise((wake) => listener.idleWaiters.push(wake)),
      });
    });
  });
}
