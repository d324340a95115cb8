import type { TemplatedApp, us_listen_socket } from '@trufflesuite/uws-js-unofficial';
import { ServiceError, toServiceError } from '../../protocol/errors.ts';
import { afterAnswers } from './after-answers.ts';
import { streamResponse, writeResponse, type Connection } from './answer-writer.ts';
import { overloaded, tooLarge, type App } from './app.ts';
import type { BodyBudget } from './body-budget.ts';
import { BODY_PACE, BodyClock, type BodyPace } from './body-pace.ts';
import { bodyStream, copyInto, OWNED_BODY_MIN } from './body-reader.ts';
import { declaredLength } from './framing.ts';
import { freeNow } from './free-now.ts';
import type { BodyArena } from '../../workers/shared/body-arena.ts';
import type { EdgeResponse } from './types.ts';
import type { Uws } from './uws-load.ts';

// With body-reader.ts and answer-writer.ts, the only file that drives uWebSockets.js (uws-load.ts loads it):
// it turns sockets into `EdgeRequestHead`s and `EdgeResponse`s into bytes. Everything else in edge/ is plain
// functions. Where no native build loads, server-node.ts gives it node:http in uWS's shape, so these rules
// hold on both edges.

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

// uWS's ListenOptions value (a const enum in its typings, so not importable as a value).
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

export interface Listening {
  port: number;
  /** Stops accepting new connections; requests on open connections are still answered. */
  stopListening(): void;
  inflight(): number;
  /** Resolves once no request is in flight. */
  idle(): Promise<void>;
}

export interface ListenOptions {
  /** Where a route that takes shared bodies gets a large one read (see workers/shared/body-arena.ts). */
  arena?: BodyArena;
  /** Request-body bytes held at once across connections (edge/http/body-budget.ts); unbounded without it. */
  bodyBudget?: BodyBudget;
  /** How slowly a body may arrive (body-pace.ts); tests shorten it. */
  bodyPace?: BodyPace;
}

// After an answer sent before its request's body was read whole, the rest of the body is still read and
// discarded (uWS frames it and drops it; nothing is buffered), so that the client, still writing, is not
// reset before it reads the answer: nginx's lingering close. The answer says `Connection: close`, and the
// client closes, or uWS's idle timeout does. A declared rest larger than this is not waited for.
const LINGER_MAX = 64 * 1024 * 1024;

export function listen(uws: Uws, app: App, host: string, port: number, options: ListenOptions = {}): Promise<Listening> {
  const { arena, bodyBudget, bodyPace = BODY_PACE } = options;
  const server: TemplatedApp = uws.App();
  let inflight = 0;
  let idleWaiters: (() => void)[] = [];

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
      const refusal = app.refuse(head, new ServiceError('INVALID_REQUEST', 'Content-Length must be one decimal length, and not sent with Transfer-Encoding.'));
      // Answered now, the request would leave uWS parsing the bytes after its first length as the next
      // request, and running it (smuggling). Unanswered, a request parsed behind it makes uWS close the
      // connection without dispatching it; the refusal goes out once this read is parsed, and closes.
      let gone = false;
      res.onAborted(() => (gone = true));
      afterAnswers(() => gone || writeResponse(res, refusal, 'close', false));
      return;
    }
    const conn: Connection = { aborted: false, onAbort: null };
    // A request is in flight from its head until it is answered, or until its client is gone before it ran.
    let running = false;
    let settled = false;
    // A large body of its own is freed once the request is over and its route is done with it (free-now.ts).
    let ownedBody: Buffer | null = null;
    let routeDone = false;
    const freeBody = () => {
      if (ownedBody !== null && settled && routeDone) freeNow(ownedBody);
      if (settled && routeDone) ownedBody = null;
    };
    const settle = () => {
      if (settled) return;
      settled = true;
      freeBody();
      if (--inflight === 0 && idleWaiters.length > 0) {
        for (const wake of idleWaiters) wake();
        idleWaiters = [];
      }
    };
    // Body bytes this request holds of the budget, given back once the route is done with them.
    let budgeted = 0;
    const giveBack = () => {
      if (budgeted > 0) bodyBudget!.give(budgeted);
      budgeted = 0;
    };
    // A body slower than the pace ends the connection; the clock stops once the body is whole or answered.
    const clock = new BodyClock(bodyPace, headAt, () => answered || conn.aborted || res.close());
    res.onAborted(() => {
      clock.stop();
      conn.aborted = true;
      conn.onAbort?.();
      prepared.abort();
      if (!running) {
        giveBack();
        settle();
      }
    });
    inflight++;
    const prepared = app.prepare(head);
    const hasBody = (declared !== null && declared > 0) || chunked;
    let answered = false;
    let paused = false;

    /** `linger`: the body was not read whole; keep reading it (bounded) so the client receives the answer. */
    const send = (response: EdgeResponse, close: boolean, linger = false) => {
      if (answered) return;
      answered = true;
      clock.stop();
      if (conn.aborted) return settle();
      if (response.stream) {
        // A held connection is read again once a streamed answer starts: a paused socket never reports its
        // client leaving, and a stream (a pairing request's) lasts as long as its client stays. uWS then ends
        // the connection at a request pipelined behind it, as behind a gateway call (node:http queues it).
        if (paused) res.resume();
        paused = false;
        streamResponse(res, conn, response, settle);
      } else {
        const lingers = linger && !close && (declared === null || declared <= LINGER_MAX);
        writeResponse(res, response, lingers ? 'linger' : close || linger ? 'close' : 'keep', paused);
        settle();
      }
    };
    const failEarly = (err: ServiceError) => send(prepared.fail(err), false, true);
    const sendLater = (pending: Promise<EdgeResponse>, close: boolean, linger = false) =>
      pending.then(
        (response) => send(response, close, linger),
        // `run` answers its own errors; this only guards the adapter against a bug there.
        (err: unknown) => send(prepared.fail(toServiceError(err)), true),
      );
    // A write starts once uWS has parsed everything that arrived with it. uWS closes a connection on which a
    // request arrives while an earlier one is unanswered, so a write followed in the same packet by a
    // pipelined request is refused before it acts, not committed with nobody to tell (node:http instead
    // serves the pipelined request after this one's answer, server-node.ts). A management write
    // then holds the connection: the next request is read once this one is answered (uWS pause/resume).
    const begin = (run: () => void) => {
      if (!prepared.holdConnection && READS.has(head.method)) {
        running = true;
        return run();
      }
      afterAnswers(() => {
        if (conn.aborted) return;
        running = true;
        if (prepared.holdConnection) {
          res.pause();
          paused = true;
        }
        run();
      });
    };

    const limit = prepared.bodyLimit;
    if (limit === null) {
      // A body nobody reads is discarded by uWS as it arrives; the answer waits for nothing.
      begin(() => void sendLater(prepared.run(null), false, hasBody));
      return;
    }
    if (declared !== null && declared > limit) {
      running = true;
      send(prepared.fail(tooLarge(limit)), true);
      return;
    }
    if (prepared.streamBody) {
      const stream = bodyStream(res, conn, limit, hasBody, clock);
      // An answer sent before the upload was read whole (an early error) lingers over the rest of it.
      running = true;
      const complete = () => {
        const whole = stream.complete();
        stream.discard();
        return whole;
      };
      prepared.runStream(stream).then(
        (response) => send(response, false, !complete()),
        (err: unknown) => {
          complete();
          send(prepared.fail(toServiceError(err)), true);
        },
      );
      return;
    }
    if (!hasBody) {
      begin(() => void sendLater(prepared.run(null), false));
      return;
    }
    // The body's declared length is held from the budget before a byte is read; a chunked body takes its
    // bytes as they come.
    if (bodyBudget !== undefined && declared !== null) {
      if (!bodyBudget.take(declared)) {
        running = true;
        failEarly(overloaded('request bodies'));
        return;
      }
      budgeted = declared;
    }
    // A declared length is read straight into one buffer. A large one owns its whole ArrayBuffer
    // (allocUnsafeSlow never hands out a slice of the shared pool), so a route can transfer it to a worker
    // without a copy; a small one goes to a worker as text anyway and may come from the pool. Bytes that do
    // not fit the declaration (uWS frames by Content-Length, so only defensively) are gathered in pieces.
    // A route that takes shared bodies gets a large one in a slot of the arena when one is free: no
    // allocation, so no garbage for V8 to collect. The slot is the request's until `run` settles (or the
    // read is abandoned), unless the route handed it to a relay worker, which frees it.
    const framed = declared !== null && declared > 0 && !chunked;
    const lease = framed && declared > OWNED_BODY_MIN && prepared.sharedBody ? (arena?.acquire(declared) ?? null) : null;
    let whole = framed ? (lease?.body ?? (declared > OWNED_BODY_MIN ? Buffer.allocUnsafeSlow(declared) : Buffer.allocUnsafe(declared))) : null;
    if (lease !== null) conn.onAbort = () => running || lease.settle();
    else if (whole !== null && whole.length > OWNED_BODY_MIN) {
      // A client gone mid-body leaves its buffer to nobody: freed now, not at V8's next collection.
      conn.onAbort = () => {
        if (!running && whole !== null) freeNow(whole);
        whole = null;
      };
    }
    let chunks: Buffer[] = [];
    let received = 0;
    res.onData((chunk, isLast) => {
      if (answered) return;
      clock.add(chunk.byteLength, isLast);
      const offset = received;
      received += chunk.byteLength;
      if (received > limit || (!framed && bodyBudget !== undefined && !bodyBudget.take(chunk.byteLength))) {
        // Refused while it streams in: nothing past the limit (or the budget) is buffered.
        whole = null;
        chunks = [];
        lease?.settle();
        giveBack();
        running = true;
        if (received > limit) send(prepared.fail(tooLarge(limit)), true);
        else failEarly(overloaded('request bodies'));
        return;
      }
      if (!framed && bodyBudget !== undefined) budgeted += chunk.byteLength;
      // uWS neuters the ArrayBuffer after this callback returns, so it is copied.
      if (whole !== null && received <= whole.length) copyInto(whole, offset, chunk);
      else {
        if (whole !== null) chunks.push(Buffer.from(whole.subarray(0, offset)));
        lease?.settle();
        whole = null;
        chunks.push(Buffer.from(new Uint8Array(chunk)));
      }
      if (!isLast) return;
      const body = whole !== null ? (received === whole.length ? whole : whole.subarray(0, received)) : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
      whole = null;
      chunks = [];
      if (lease === null && body.length > OWNED_BODY_MIN) ownedBody = body;
      begin(() => {
        const ran = prepared.run(body);
        const done = () => {
          giveBack();
          routeDone = true;
          freeBody();
        };
        ran.then(done, done);
        if (lease !== null) ran.then(lease.settle, lease.settle);
        sendLater(ran, false);
      });
    });
  });

  return new Promise((resolve, reject) => {
    // Exclusively: uWS sets SO_REUSEPORT by default, and a second service on the same port would then also
    // listen, with the kernel splitting connections between the two.
    const listenExclusive = server.listen as unknown as (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => void;
    listenExclusive.call(server, host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, (socket: us_listen_socket | false) => {
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
        inflight: () => inflight,
        idle: () => (inflight === 0 ? Promise.resolve() : new Promise((wake) => idleWaiters.push(wake))),
      });
    });
  });
}
