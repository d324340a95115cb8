/** A request as the core sees it: no socket, so every edge function is testable in-process. */
export interface EdgeRequest {
  method: string;
  /** Path without the query string, as sent (percent-encoding intact). */
  path: string;
  /** Raw query string without the leading `?`. */
  query: string;
  /** Lower-case header names. */
  headers: Readonly<Record<string, string>>;
  body: Buffer | null;
  /** The peer's IP address as text, when a socket carried the request (absent for in-process calls). */
  peer?: string;
}

export type EdgeRequestHead = Omit<EdgeRequest, 'body'>;

export interface EdgeResponse {
  status: number;
  headers: Record<string, string>;
  body: string | Uint8Array;
  /** Set for answers written over time (streams): the adapter hands it a writer instead of sending `body`. */
  stream?: (out: ResponseWriter) => void;
}

/** How a streamed answer reaches the client socket, with the socket's backpressure. */
export interface ResponseWriter {
  /** Status and headers; the edge adds the request IDs and CORS headers. */
  head(status: number, headers: Record<string, string>): void;
  /**
   * False when the socket is full: stop until `onWritable` fires. A string is sent as UTF-8, so a caller
   * with bytes passes a string only when they are ASCII (see `wireChunk`).
   */
  write(chunk: Uint8Array | string): boolean;
  /**
   * The last bytes, then the end. `failed`: the answer ends in order on the wire but the call failed (an SSE
   * stream closed by its error event): logged as `upstream_failed`, not `completed`. Transports ignore it.
   */
  end(chunk?: Uint8Array | string, failed?: boolean): void;
  /** Ends the answer by closing the connection: the only honest end for a broken non-SSE stream. */
  abort(): void;
  onWritable(callback: () => void): void;
  /** The client went away; called at most once. */
  onAbort(callback: () => void): void;
}

/** A request body read as it arrives; the adapter pauses the socket while the consumer lags. */
export type BodyStream = AsyncIterable<Uint8Array>;

export type { Principal } from '../../protocol/principal.ts';

/** One WebSocket connection as a socket route sees it (server.ts adapts uWS, server-node-ws.ts the ws package). */
export interface SocketPeer {
  /** Sends one text message; false when the connection's send buffer is over its mark: wait for `drained`. */
  send(text: string): boolean;
  /** Closes the connection with a close code and a reason (at most 123 bytes of UTF-8). */
  close(code: number, reason: string): void;
}

/** What a connection's messages reach once it is open. */
export interface SocketSession {
  /** One whole message (text or binary), at most twice the route's `maxMessageBytes`. */
  message(data: Buffer, isBinary: boolean): void;
  /** The send buffer has room again. */
  drained(): void;
  /** The connection closed, by either side; called once. */
  closed(): void;
}

/** Counts a socket's work as requests in flight, so that a drain waits for it as for an HTTP call. */
export interface InflightCounter {
  began(): void;
  ended(): void;
}

/** A WebSocket route: `GET <path>` with an upgrade. */
export interface SocketRoute {
  path: string;
  /**
   * The largest message the session is given; a larger one, up to twice as large, is refused by the session
   * (`tooLarge`), and a still larger one is cut off by the transport (1009, or an abrupt close on uWS).
   */
  maxMessageBytes: number;
  /** Checks the upgrade's head (Host, Origin, token, scope): a session to open, or the HTTP answer refusing it. */
  accept(head: EdgeRequestHead): { open(peer: SocketPeer, inflight: InflightCounter): SocketSession } | EdgeResponse;
}
