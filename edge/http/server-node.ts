import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { nodeSockets } from './server-node-ws.ts';
import type { Socket } from 'node:net';
import { errorEnvelope, ServiceError } from '../../protocol/errors.ts';
import { newRequestId, setRequestIdHeaders } from './request-id.ts';
import type { Uws } from './uws-load.ts';

// The edge where no native uWebSockets.js build loads (Node 22/24 on glibc older than 2.38): node:http behind
// the few uWS calls server.ts makes, so that `listen` and everything behind it run unchanged and there is one
// implementation of the edge's connection rules (body budget, arena, lingering early answers, held
// connections, in-flight counting). Where uWS's own parser behaves differently, node:http's answer stands
// (docs/api.md, HTTP at the edge).

/** uWS's HTTP idle timeout, so that both edges drop silent clients alike. */
const IDLE_MS = 10_000;

export interface NodeEdgeOptions {
  /** A request head (request line and header fields) must arrive whole within this; tests shorten it. */
  headTimeoutMs?: number;
}

/** Request line and header fields together; a larger head is 431. */
const MAX_HEAD_BYTES = 64 * 1024;

/** Pipelined requests parsed while one is unanswered wait their turn; past this many reading pauses. */
const MAX_WAITING = 64;

interface SocketState {
  /** The request on this connection whose answer has not been ended. */
  current: NodeResponse | null;
  /** Requests parsed behind it (pipelined), served in order, each once the one before is answered. */
  waiting: (() => void)[];
  /** Reading paused because too many wait. */
  flooded: boolean;
  /** An answer said `Connection: close`: nothing read after it is served. */
  closing: boolean;
}

const sockets = new WeakMap<Socket, SocketState>();

function socketState(socket: Socket): SocketState {
  let state = sockets.get(socket);
  if (state === undefined) {
    const created: SocketState = { current: null, waiting: [], flooded: false, closing: false };
    sockets.set(socket, (state = created));
    // Also for an answer node:http has not given the socket yet (queued behind the one before it), whose
    // own 'close' would never come.
    socket.once('close', () => {
      created.waiting = [];
      created.current?.abort();
    });
  }
  return state;
}

/** A copy: uWS hands out a buffer that is only valid during its callback, and server.ts copies what it keeps. */
const arrayBuffer = (chunk: Buffer): ArrayBuffer =>
  chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength) as ArrayBuffer;

/**
 * An answer with `Connection: close` whose request body was not read whole: half-close after the answer and
 * keep reading (node:http discards the rest of the body), so the client, still writing, gets the answer
 * rather than a reset; it closes, or the idle timeout does.
 */
function lingerAfter(socket: Socket): void {
  socket.destroySoon = function (this: Socket) {
    this.end();
    const timer = setTimeout(() => this.destroy(), IDLE_MS);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
  };
}

/**
 * What Node's parser refuses (bytes outside HTTP/1.1's grammar, an HTTP/1.1 request without Host, repeated
 * Content-Length) gets the error envelope like every other 400 here, rather than Node's bare status line.
 */
function parserRefusal(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    // A head still coming in behind a request being answered (pipelined, or a held connection's) is timed
    // once that answer is out; cutting it now would lose the answer.
    if (sockets.get(socket)?.current) return;
    if (socket.writable && !socket.destroyed) socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    else socket.destroy();
    return;
  }
  // Bytes after a request that said `Connection: close` (llhttp refuses them): they are not served (RFC 9112,
  // 9.6), and the answer to that request, still to come, closes the connection.
  if (err.code === 'HPE_CLOSED_CONNECTION' && socket.writable) return;
  // Node's own rule: no answer while another is being written on this connection.
  const writing = (socket as Socket & { _httpMessage?: { headersSent: boolean } })._httpMessage?.headersSent === true;
  if (!socket.writable || writing || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    socket.end('HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n');
    return;
  }
  const { headers, body } = refusal('The request is not valid HTTP/1.1 (its request line, header fields or framing).');
  let head = 'HTTP/1.1 400 Bad Request\r\n';
  for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
  socket.end(Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), body]));
}

function refusal(message: string): { headers: Record<string, string>; body: Buffer } {
  const requestId = newRequestId();
  const headers: Record<string, string> = { 'content-type': 'application/json', connection: 'close' };
  setRequestIdHeaders(headers, requestId);
  const body = Buffer.from(JSON.stringify(errorEnvelope(new ServiceError('INVALID_REQUEST', message), requestId)));
  headers['content-length'] = String(body.length);
  return { headers, body };
}

function serveNext(state: SocketState, socket: Socket): void {
  if (socket.destroyed || state.current !== null) return;
  state.waiting.shift()?.();
  if (state.flooded && state.waiting.length === 0) {
    state.flooded = false;
    socket.resume();
  }
}

class NodeRequest {
  constructor(private readonly req: IncomingMessage) {}
  forEach(each: (name: string, value: string) => void): void {
    const raw = this.req.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) each(raw[i]!.toLowerCase(), raw[i + 1]!);
  }
  getCaseSensitiveMethod(): string {
    return this.req.method ?? '';
  }
  getUrl(): string {
    const url = this.req.url ?? '';
    const q = url.indexOf('?');
    return q === -1 ? url : url.slice(0, q);
  }
  getQuery(): string | undefined {
    const url = this.req.url ?? '';
    const q = url.indexOf('?');
    return q === -1 ? undefined : url.slice(q + 1);
  }
}

class NodeResponse {
  private status = 200;
  private headers: [string, string][] = [];
  private headWritten = false;
  private ended = false;
  private lingers = false;
  /** The body is being read: the idle timeout runs (not while paused, as on uWS). */
  private reading = false;
  private onAbortedCallback: (() => void) | null = null;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly state: SocketState,
  ) {
    state.current = this;
    res.on('close', () => this.abort());
  }

  getRemoteAddressAsText(): ArrayBuffer {
    const bytes = Buffer.from(this.req.socket.remoteAddress ?? '', 'latin1');
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
  }

  private finished(): void {
    this.ended = true;
    if (this.state.current === this) this.state.current = null;
  }

  /**
   * The connection is gone before the answer was ended. Called at once where this adapter closes it (node's
   * own 'close' comes a loop phase later), as uWS does, so that no write starts on a closed connection.
   */
  abort(): void {
    if (this.ended) return;
    this.finished();
    this.onAbortedCallback?.();
  }

  private writeHead(close: boolean): void {
    if (this.headWritten) return;
    this.headWritten = true;
    const { res } = this;
    res.statusCode = this.status;
    for (const [name, value] of this.headers) {
      try {
        res.setHeader(name, value);
      } catch {
        // node:http refuses a value uWS would write as is (a character past U+00FF): the header is left
        // out rather than the answer lost.
      }
    }
    if (close || this.lingers) res.setHeader('connection', 'close');
    if (this.lingers && !close) {
      lingerAfter(this.req.socket);
      // The rest of the body is read and dropped, also when reading had been paused for a slow consumer.
      this.req.resume();
      this.req.socket.resume();
    }
  }

  onAborted(callback: () => void): this {
    this.onAbortedCallback = callback;
    return this;
  }

  /** Body bytes as they arrive; the last chunk is held back until the body ends, so it can say `isLast`. */
  onData(callback: (chunk: ArrayBuffer, isLast: boolean) => void): this {
    const { req } = this;
    // A body that does not arrive within the idle timeout ends the connection, as on uWS; the wait for the
    // answer after it is not timed (an upstream may take minutes).
    this.reading = true;
    req.socket.setTimeout(IDLE_MS);
    let held: Buffer | null = null;
    req.on('data', (chunk: Buffer) => {
      if (held !== null) callback(arrayBuffer(held), false);
      held = chunk;
    });
    req.on('end', () => {
      this.reading = false;
      req.socket.setTimeout(0);
      const last = held;
      held = null;
      callback(last === null ? new ArrayBuffer(0) : arrayBuffer(last), true);
    });
    return this;
  }

  onWritable(callback: (offset: number) => boolean): this {
    this.res.on('drain', () => callback(0));
    return this;
  }

  /** Stops reading the connection: the rest of this body, and any request after it, wait. */
  pause(): void {
    this.req.pause();
    this.req.socket.pause();
    this.req.socket.setTimeout(0);
  }

  resume(): void {
    this.req.socket.resume();
    this.req.resume();
    if (this.reading) this.req.socket.setTimeout(IDLE_MS);
  }

  cork(callback: () => void): this {
    // The socket itself: an ended response lets go of its socket, and its own uncork would then miss it.
    const socket = this.req.socket;
    socket.cork();
    try {
      callback();
    } finally {
      socket.uncork();
    }
    return this;
  }

  writeStatus(status: string): this {
    this.status = Number.parseInt(status, 10);
    return this;
  }

  writeHeader(name: string, value: string): this {
    // server.ts writes this header only for a lingering answer; uWS writes the closing kind itself.
    if (name === 'connection' && value === 'close') this.lingers = true;
    else this.headers.push([name, value]);
    return this;
  }

  write(chunk: string | Uint8Array): boolean {
    this.writeHead(false);
    return this.res.write(chunk);
  }

  end(body: string | Uint8Array = '', closeConnection = false): this {
    if (this.ended) return this;
    this.writeHead(closeConnection);
    this.finished();
    this.res.end(body);
    const { state } = this;
    const socket = this.req.socket;
    // Nothing after an answer that closes the connection is served (RFC 9112, 9.6): a write would commit
    // with its answer lost. Otherwise the next pipelined request, once this call (often inside the adapter's
    // cork) has returned.
    if (closeConnection || this.lingers || !this.res.shouldKeepAlive) {
      state.closing = true;
      state.waiting = [];
    } else if (state.waiting.length > 0) queueMicrotask(() => serveNext(state, socket));
    return this;
  }

  endWithoutBody(_length?: number, closeConnection = false): this {
    return this.end('', closeConnection);
  }

  close(): this {
    this.abort();
    this.req.socket.destroy();
    return this;
  }
}

interface ListenToken {
  port: number;
  close(): void;
}

type Handler = (res: NodeResponse, req: NodeRequest) => void;

function app(headTimeoutMs: number) {
  let handler: Handler = () => undefined;
  const server = createServer({
    // Long answers are not timed; bodies are paced by server.ts (body-pace.ts), as on uWS.
    requestTimeout: 0,
    // node:http checks heads on a timer, every 30 s by default: a head trickled a line a second then
    // lasted up to 40 s.
    headersTimeout: headTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, Math.max(10, Math.round(headTimeoutMs / 4))),
    keepAliveTimeout: IDLE_MS,
    // Checked below instead, so that the refusal carries the error envelope.
    requireHostHeader: false,
    // The request line counts: 16 KiB (Node's default) would refuse long IDs that uWS lets routes answer.
    maxHeaderSize: MAX_HEAD_BYTES,
  });
  // node:http otherwise drops header lines past 2,000 without a word; maxHeaderSize bounds them.
  server.maxHeadersCount = 0;
  server.on('clientError', parserRefusal);
  const sockets = nodeSockets(server);
  const serve = (req: IncomingMessage, res: ServerResponse, state: SocketState) => {
    if (req.httpVersion === '1.1' && req.headers.host === undefined) {
      const { headers, body } = refusal('An HTTP/1.1 request must send a Host header.');
      res.writeHead(400, headers).end(body);
      return;
    }
    handler(new NodeResponse(req, res, state), new NodeRequest(req));
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const state = socketState(req.socket);
    // Parsed from the rest of a lingering connection (the body an early answer did not wait for, and beyond).
    if (state.closing) return;
    // node:http parses a whole read before any answer can be written, so a request pipelined behind one
    // still running waits its turn: the adapter sees one request at a time on a connection, as on uWS, and
    // none is cut off (uWS instead ends the connection when the one before is not answered by then).
    if (state.current !== null || state.waiting.length > 0) {
      state.waiting.push(() => serve(req, res, state));
      // A read already parsed still arrives whole; no further one is read until the queue is served.
      // Again at each request: a held answer's resume may have restarted reading meanwhile.
      if (state.waiting.length >= MAX_WAITING) {
        state.flooded = true;
        req.socket.pause();
      }
      return;
    }
    serve(req, res, state);
  });
  return {
    any(_pattern: string, h: Handler) {
      handler = h;
      return this;
    },
    ws: sockets.ws,
    // As uWS's App.close(): no more listening, and the connections no request is using are closed.
    close() {
      server.close();
      server.closeIdleConnections();
      sockets.close();
      return this;
    },
    listen(host: string, port: number, _options: number, callback: (token: ListenToken | false) => void) {
      const failed = () => callback(false);
      server.once('error', failed);
      // exclusive: a second service on the same port fails with EADDRINUSE (node:http sets no SO_REUSEPORT).
      server.listen({ host, port, exclusive: true }, () => {
        server.off('error', failed);
        // Later errors are the accept loop's (EMFILE): uWS carries on past them, and so does this listener.
        server.on('error', () => undefined);
        const address = server.address();
        callback({
          port: typeof address === 'object' && address !== null ? address.port : port,
          close: () => server.close(),
        });
      });
    },
  };
}

/** node:http shaped as the part of the uWS module that server.ts uses. */
export function nodeHttpUws({ headTimeoutMs = IDLE_MS }: NodeEdgeOptions = {}): Uws {
  const shim = {
    App: () => app(headTimeoutMs),
    us_socket_local_port: (token: ListenToken) => token.port,
    us_listen_socket_close: (token: ListenToken) => token.close(),
  };
  return shim as unknown as Uws;
}
