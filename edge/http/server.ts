import { STATUS_CODES } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { HttpResponse, TemplatedApp, us_listen_socket } from '@trufflesuite/uws-js-unofficial';
import { ClientClosed, toServiceError } from '../../protocol/errors.ts';
import { tooLarge, type App } from './app.ts';
import type { BodyArena } from '../../workers/proxy/body-arena.ts';
import type { BodyStream, EdgeResponse } from './types.ts';

// The only file that touches uWebSockets.js: it turns sockets into `EdgeRequestHead`s and `EdgeResponse`s
// into bytes. Everything else in edge/ is plain functions.

type Uws = typeof import('@trufflesuite/uws-js-unofficial');

const require = createRequire(import.meta.url);

/**
 * The package silently swaps in a slow pure-JS server when its native binary does not load, so the binary
 * is loaded here by name: either the native server runs, or the caller learns that it does not.
 */
export function loadUws(allowFallback: boolean): { uws: Uws; native: boolean; reason?: string } {
  const pkgDir = dirname(require.resolve('@trufflesuite/uws-js-unofficial/package.json'));
  const binary = join(pkgDir, 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
  try {
    return { uws: require(binary) as Uws, native: true };
  } catch (err) {
    const reason = `no native uWebSockets.js binary for ${process.platform}-${process.arch}, Node ABI ${process.versions.modules}`;
    if (!allowFallback) throw new Error(`${reason}. Use a supported Node.js (20.x) or set SWITCHYARD_ALLOW_SLOW_EDGE=1.`, { cause: err });
    return { uws: require(join(pkgDir, 'dist', 'index.js')) as Uws, native: false, reason };
  }
}

const STATUS_LINES = new Map<number, string>(Object.entries(STATUS_CODES).map(([code, text]) => [Number(code), `${code} ${text}`]));
const statusLine = (status: number) => STATUS_LINES.get(status) ?? String(status);

function writeResponse(res: HttpResponse, response: EdgeResponse, forceClose: boolean): void {
  res.cork(() => {
    res.writeStatus(statusLine(response.status));
    let close = forceClose;
    for (const name in response.headers) {
      // uWS writes its own Connection and Content-Length headers.
      if (name === 'connection') close ||= response.headers[name] === 'close';
      else if (name !== 'content-length') res.writeHeader(name, response.headers[name]!);
    }
    if (response.status === 204 || response.status === 304) res.endWithoutBody(undefined, close);
    else res.end(response.body, close);
  });
}

/**
 * Copies `chunk` into `into` at `at`. Buffer#fill with a source exactly as long as the range is one memcpy,
 * where TypedArray#set into a SharedArrayBuffer (an arena slot) is V8's word-by-word relaxed-atomic copy:
 * measured under load, about 80 us instead of about 20 for a 256 KB body.
 */
function copyInto(into: Buffer, at: number, chunk: ArrayBuffer): void {
  if (chunk.byteLength > 0) into.fill(new Uint8Array(chunk), at, at + chunk.byteLength);
}

interface Connection {
  aborted: boolean;
  onAbort: (() => void) | null;
}

// Bodies larger than this are read into a buffer of their own (see `listen`).
const OWNED_BODY_MIN = 64 * 1024;

// A streamed upload is read with backpressure: the socket is paused while more than this is queued.
const UPLOAD_HIGH_WATER = 512 * 1024;

/** The request body as an async iterable; the socket pauses while the consumer lags, and the limit holds. */
function bodyStream(res: HttpResponse, conn: Connection, limit: number, hasBody: boolean): BodyStream & { complete(): boolean } {
  const queue: Uint8Array[] = [];
  let queued = 0;
  let received = 0;
  let ended = !hasBody;
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  let paused = false;
  const notify = () => {
    wake?.();
    wake = null;
  };
  if (hasBody) {
    res.onData((chunk, isLast) => {
      received += chunk.byteLength;
      if (received > limit) failure = tooLarge(limit);
      else {
        queue.push(new Uint8Array(chunk.slice(0)));
        queued += chunk.byteLength;
        if (queued > UPLOAD_HIGH_WATER && !paused) {
          paused = true;
          res.pause();
        }
      }
      if (isLast) ended = true;
      notify();
    });
  }
  const previous = conn.onAbort;
  conn.onAbort = () => {
    previous?.();
    failure ??= new ClientClosed();
    notify();
  };
  return {
    complete: () => ended && failure === null,
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (failure) throw failure;
        const next = queue.shift();
        if (next) {
          queued -= next.byteLength;
          if (paused && queued < UPLOAD_HIGH_WATER / 2 && !conn.aborted) {
            paused = false;
            res.resume();
          }
          yield next;
          continue;
        }
        if (ended) return;
        await new Promise<void>((r) => (wake = r));
      }
    },
  };
}

/** Hands a streamed answer a writer over the socket: uWS write backpressure becomes `write() === false`. */
function streamResponse(res: HttpResponse, conn: Connection, response: EdgeResponse, done: () => void): void {
  let finished = false;
  let writable: (() => void) | null = null;
  let abortCallback: (() => void) | null = null;
  const finish = () => {
    if (!finished) {
      finished = true;
      done();
    }
  };
  const previous = conn.onAbort;
  conn.onAbort = () => {
    previous?.();
    abortCallback?.();
    finish();
  };
  res.onWritable(() => {
    writable?.();
    return true;
  });
  // The head waits for the first body bytes of the same turn, so a whole answer leaves in one send; a
  // stream whose data comes later gets its head on the next turn anyway.
  let pendingHead: { status: number; headers: Record<string, string> } | null = null;
  const writeHead = () => {
    if (pendingHead === null) return;
    res.writeStatus(statusLine(pendingHead.status));
    const headers = pendingHead.headers;
    for (const name in headers) if (name !== 'content-length' && name !== 'connection') res.writeHeader(name, headers[name]!);
    pendingHead = null;
  };
  response.stream!({
    head(status, headers) {
      if (conn.aborted) return;
      pendingHead = { status, headers };
      setImmediate(() => {
        if (pendingHead !== null && !conn.aborted && !finished) res.cork(writeHead);
      });
    },
    write(chunk) {
      if (conn.aborted || finished) return true;
      let ok = true;
      res.cork(() => {
        writeHead();
        ok = res.write(chunk);
      });
      return ok;
    },
    end(chunk) {
      if (!conn.aborted && !finished) {
        res.cork(() => {
          writeHead();
          res.end(chunk ?? '');
        });
      }
      finish();
    },
    abort() {
      if (!conn.aborted && !finished) res.close();
      finish();
    },
    onWritable(callback) {
      writable = callback;
    },
    onAbort(callback) {
      abortCallback = callback;
    },
  });
}

export interface Listening {
  port: number;
  /** Stops accepting new connections; requests on open connections are still answered. */
  stopListening(): void;
  inflight(): number;
  /** Resolves once no request is in flight. */
  idle(): Promise<void>;
}

/** `arena`: where a route that takes shared bodies gets a large one read (see workers/proxy/body-arena.ts). */
export function listen(uws: Uws, app: App, host: string, port: number, arena?: BodyArena): Promise<Listening> {
  const server: TemplatedApp = uws.App();
  let inflight = 0;
  let idleWaiters: (() => void)[] = [];

  server.any('/*', (res, req) => {
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
    };
    const conn: Connection = { aborted: false, onAbort: null };
    res.onAborted(() => {
      conn.aborted = true;
      conn.onAbort?.();
      prepared.abort();
    });
    inflight++;
    const prepared = app.prepare(head);
    const declared = headers['content-length'] === undefined ? 0 : Number(headers['content-length']);
    const hasBody = declared > 0 || headers['transfer-encoding'] !== undefined;
    let answered = false;

    const send = (response: EdgeResponse, close: boolean) => {
      if (answered) return;
      answered = true;
      const done = () => {
        if (--inflight === 0 && idleWaiters.length > 0) {
          for (const wake of idleWaiters) wake();
          idleWaiters = [];
        }
      };
      if (conn.aborted) return done();
      if (response.stream) streamResponse(res, conn, response, done);
      else {
        writeResponse(res, response, close);
        done();
      }
    };
    const sendLater = (pending: Promise<EdgeResponse>, close: boolean) =>
      pending.then(
        (response) => send(response, close),
        // `run` answers its own errors; this only guards the adapter against a bug there.
        (err: unknown) => send(prepared.fail(toServiceError(err)), true),
      );

    const limit = prepared.bodyLimit;
    if (limit === null) {
      // A body nobody reads is left unread; closing the connection keeps the next request's framing sane.
      sendLater(prepared.run(null), hasBody);
      return;
    }
    if (declared > limit) {
      send(prepared.fail(tooLarge(limit)), true);
      return;
    }
    if (prepared.streamBody) {
      const stream = bodyStream(res, conn, limit, hasBody);
      // An answer sent before the upload was read whole (an early error) closes the connection: the unread
      // rest of the body would otherwise be taken for the next request.
      prepared.runStream(stream).then(
        (response) => send(response, !stream.complete()),
        (err: unknown) => send(prepared.fail(toServiceError(err)), true),
      );
      return;
    }
    if (!hasBody) {
      sendLater(prepared.run(null), false);
      return;
    }
    // A declared length is read straight into one buffer. A large one owns its whole ArrayBuffer
    // (allocUnsafeSlow never hands out a slice of the shared pool), so a route can transfer it to a worker
    // without a copy; a small one goes to a worker as text anyway and may come from the pool. Bytes that do
    // not fit the declaration (uWS frames by Content-Length, so only defensively) are gathered in pieces.
    // A route that takes shared bodies gets a large one in a slot of the arena when one is free: no
    // allocation, so no garbage for V8 to collect. The slot is the request's until `run` settles (or the
    // read is abandoned), unless the route handed it to a relay worker, which frees it.
    const framed = declared > 0 && Number.isSafeInteger(declared) && headers['transfer-encoding'] === undefined;
    const lease = framed && declared > OWNED_BODY_MIN && prepared.sharedBody ? (arena?.acquire(declared) ?? null) : null;
    let whole = framed ? (lease?.body ?? (declared > OWNED_BODY_MIN ? Buffer.allocUnsafeSlow(declared) : Buffer.allocUnsafe(declared))) : null;
    let running = false;
    if (lease !== null) conn.onAbort = () => running || lease.settle();
    let chunks: Buffer[] = [];
    let received = 0;
    res.onData((chunk, isLast) => {
      if (answered) return;
      const offset = received;
      received += chunk.byteLength;
      if (received > limit) {
        // Refused while it streams in: nothing past the limit is buffered.
        whole = null;
        chunks = [];
        lease?.settle();
        send(prepared.fail(tooLarge(limit)), true);
        return;
      }
      // uWS neuters the ArrayBuffer after this callback returns, so it is copied.
      if (whole !== null && received <= whole.length) copyInto(whole, offset, chunk);
      else {
        if (whole !== null) chunks.push(Buffer.from(whole.subarray(0, offset)));
        lease?.settle();
        whole = null;
        chunks.push(Buffer.from(new Uint8Array(chunk)));
      }
      if (!isLast) return;
      running = true;
      const body = whole !== null ? (received === whole.length ? whole : whole.subarray(0, received)) : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
      const ran = prepared.run(body);
      if (lease !== null) ran.then(lease.settle, lease.settle);
      sendLater(ran, false);
    });
  });

  return new Promise((resolve, reject) => {
    server.listen(host, port, (socket: us_listen_socket | false) => {
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
