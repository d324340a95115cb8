import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

// WebSocket routes on the node:http edge, in the shape of the part of uWS's `App.ws` that server-sockets.ts uses,
// over the ws package: the upgrade handler gets a request and a response that read and answer as uWS's do, and
// each connection a socket object with uWS's send results, so that the route code is the same on both edges.

/** uWS's send results. */
const SUCCESS = 1;
const BACKPRESSURE = 0;
/** An idle connection is pinged this often, and closed when the last ping was not answered by the next. */
const PING_MS = 30_000;

interface ShimSocket<T> {
  getUserData(): T;
  send(message: string, isBinary: boolean, compress: boolean): number;
  end(code: number, reason: string): void;
}

interface ShimBehavior<T> {
  maxPayloadLength: number;
  upgrade(res: ShimUpgradeResponse<T>, req: ShimUpgradeRequest, context: unknown): void;
  open(ws: ShimSocket<T>): void;
  message(ws: ShimSocket<T>, message: ArrayBuffer, isBinary: boolean): void;
  drain(ws: ShimSocket<T>): void;
  close(ws: ShimSocket<T>, code: number, message: ArrayBuffer): void;
}

interface ShimUpgradeRequest {
  forEach(cb: (name: string, value: string) => void): void;
  getUrl(): string;
  getQuery(): string | undefined;
}

interface ShimUpgradeResponse<T> {
  getRemoteAddressAsText(): ArrayBuffer;
  upgrade(userData: T, key: string, protocol: string, extensions: string, context: unknown): void;
  cork(cb: () => void): void;
  resume(): void;
  writeStatus(status: string): void;
  writeHeader(name: string, value: string): void;
  end(body?: string | Uint8Array, close?: boolean): void;
  endWithoutBody(length?: number, close?: boolean): void;
}

/** The WebSocket routes of one node:http server, and the connections they hold. */
export function nodeSockets(server: Server) {
  const routes = new Map<string, ShimBehavior<unknown>>();
  const open = new Set<WebSocket>();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const [path = '', query] = (req.url ?? '').split('?', 2);
    const behavior = req.method === 'GET' ? routes.get(path) : undefined;
    if (behavior === undefined || req.headers.upgrade?.toLowerCase() !== 'websocket') {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    behavior.upgrade(upgradeResponse(req, socket, head, behavior, open), upgradeRequest(req, path, query), null);
  });
  return {
    ws<T>(pattern: string, behavior: ShimBehavior<T>): void {
      routes.set(pattern, behavior as ShimBehavior<unknown>);
    },
    /** As uWS's App.close(): every WebSocket connection is closed, going away. */
    close(): void {
      for (const ws of open) ws.close(1001, 'The service is shutting down.');
    },
  };
}

function upgradeRequest(req: IncomingMessage, path: string, query: string | undefined): ShimUpgradeRequest {
  return {
    forEach(cb) {
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) cb(name, Array.isArray(value) ? value.join(', ') : value);
      }
    },
    getUrl: () => path,
    getQuery: () => query,
  };
}

function upgradeResponse<T>(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  behavior: ShimBehavior<T>,
  open: Set<WebSocket>,
): ShimUpgradeResponse<T> {
  let answer = '';
  return {
    getRemoteAddressAsText: () => new TextEncoder().encode(req.socket.remoteAddress ?? '').buffer as ArrayBuffer,
    upgrade(userData) {
      const wss = new WebSocketServer({
        noServer: true,
        maxPayload: behavior.maxPayloadLength,
        perMessageDeflate: false,
      });
      wss.handleUpgrade(req, socket, head, (ws) => connect(ws, socket, userData, behavior, open));
    },
    cork: (cb) => cb(),
    resume() {},
    writeStatus: (status) => void (answer = `HTTP/1.1 ${status}\r\n`),
    writeHeader: (name, value) => void (answer += `${name}: ${value}\r\n`),
    end(body = '') {
      const bytes = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body);
      socket.end(
        Buffer.concat([Buffer.from(`${answer}content-length: ${bytes.length}\r\nconnection: close\r\n\r\n`), bytes]),
      );
    },
    endWithoutBody() {
      socket.end(`${answer}connection: close\r\n\r\n`);
    },
  };
}

function connect<T>(ws: WebSocket, socket: Duplex, userData: T, behavior: ShimBehavior<T>, open: Set<WebSocket>): void {
  open.add(ws);
  const shim: ShimSocket<T> = {
    getUserData: () => userData,
    send(message) {
      ws.send(message);
      return socket.writableNeedDrain ? BACKPRESSURE : SUCCESS;
    },
    end: (code, reason) => ws.close(code, reason),
  };
  let answered = true;
  const pings = setInterval(() => {
    if (!answered) return ws.terminate();
    answered = false;
    ws.ping();
  }, PING_MS);
  pings.unref();
  ws.on('pong', () => (answered = true));
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    answered = true;
    behavior.message(
      shim,
      data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer,
      isBinary,
    );
  });
  socket.on('drain', () => behavior.drain(shim));
  // A protocol error (a frame too large, bad UTF-8) closes the connection with its code; nothing to report.
  ws.on('error', () => undefined);
  ws.on('close', (code: number) => {
    clearInterval(pings);
    open.delete(ws);
    behavior.close(shim, code, new ArrayBuffer(0));
  });
  behavior.open(shim);
}
