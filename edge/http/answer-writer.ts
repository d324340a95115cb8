import { STATUS_CODES } from 'node:http';
import type { HttpResponse } from '@trufflesuite/uws-js-unofficial';
import type { EdgeResponse } from './types.ts';

// The answering half of server.ts: an answer's bytes on the uWS edge (a whole answer, or a stream with write
// backpressure). The body's half is body-reader.ts.

const STATUS_LINES = new Map<number, string>(Object.entries(STATUS_CODES).map(([code, text]) => [Number(code), `${code} ${text}`]));
const statusLine = (status: number) => STATUS_LINES.get(status) ?? String(status);

/**
 * `close`: end the connection with the answer. `linger`: say `Connection: close` but leave the closing to the
 * client, so the unread rest of its body is discarded rather than answered with a reset (see LINGER_MAX).
 * `paused`: reading was paused while the request ran (a held connection); it resumes with the answer.
 */
export function writeResponse(res: HttpResponse, response: EdgeResponse, mode: 'keep' | 'close' | 'linger', paused: boolean): void {
  res.cork(() => {
    if (paused) res.resume();
    res.writeStatus(statusLine(response.status));
    let close = mode === 'close';
    for (const name in response.headers) {
      // uWS writes its own Connection and Content-Length headers.
      if (name === 'connection') close ||= response.headers[name] === 'close' && mode !== 'linger';
      else if (name !== 'content-length') res.writeHeader(name, response.headers[name]!);
    }
    if (mode === 'linger') res.writeHeader('connection', 'close');
    if (response.status === 204 || response.status === 304) res.endWithoutBody(undefined, close);
    else res.end(response.body, close);
  });
}

export interface Connection {
  aborted: boolean;
  onAbort: (() => void) | null;
}

/** Hands a streamed answer a writer over the socket: uWS write backpressure becomes `write() === false`. */
export function streamResponse(res: HttpResponse, conn: Connection, response: EdgeResponse, done: () => void): void {
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
