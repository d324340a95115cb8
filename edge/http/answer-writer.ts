import { STATUS_CODES } from 'node:http';
import type { HttpResponse } from 'uws-pack';
import { toServiceError, type ServiceError } from '../../protocol/errors.ts';
import { afterAnswers } from './after-answers.ts';
import type { Prepared } from './app.ts';
import type { BodyBudget } from './body-budget.ts';
import { BodyClock, type BodyPace } from './body-pace.ts';
import { freeNow } from './free-now.ts';
import type { BodyArena } from '../../workers/shared/body-arena.ts';
import type { EdgeResponse } from './types.ts';

// The answering half of server.ts: one request's life on the uWS edge (EdgeExchange) from its head to its
// answer, and the answer's bytes (a whole answer, or a stream with write backpressure). The body's half is
// body-reader.ts. A request's state is the fields of one object with its steps as methods, not closures: the
// hot path allocates the exchange, where it would otherwise allocate a closure context and one closure a step.

const STATUS_LINES = new Map<number, string>(
  Object.entries(STATUS_CODES).map(([code, text]) => [Number(code), `${code} ${text}`]),
);
const statusLine = (status: number) => STATUS_LINES.get(status) ?? String(status);

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

// After an answer sent before its request's body was read whole, the rest of the body is still read and
// discarded (uWS frames it and drops it; nothing is buffered), so that the client, still writing, is not
// reset before it reads the answer: nginx's lingering close. The answer says `Connection: close`, and the
// client closes, or uWS's idle timeout does. A declared rest larger than this is not waited for.
const LINGER_MAX = 64 * 1024 * 1024;

/**
 * `close`: end the connection with the answer. `linger`: say `Connection: close` but leave the closing to the
 * client, so the unread rest of its body is discarded rather than answered with a reset (see LINGER_MAX).
 * `paused`: reading was paused while the request ran (a held connection); it resumes with the answer.
 */
export function writeResponse(
  res: HttpResponse,
  response: EdgeResponse,
  mode: 'keep' | 'close' | 'linger',
  paused: boolean,
): void {
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
    for (const name in headers)
      if (name !== 'content-length' && name !== 'connection') res.writeHeader(name, headers[name]!);
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

/** What every request of one listener shares: its in-flight count, and where bodies are held and counted. */
export interface ListenerState {
  inflight: number;
  idleWaiters: (() => void)[];
  readonly arena: BodyArena | undefined;
  /** Request-body bytes held at once across connections (edge/http/body-budget.ts); unbounded without it. */
  readonly bodyBudget: BodyBudget | undefined;
}

/**
 * One request from its head to its answer. It is in flight from its head until it is answered, or until its
 * client is gone before it ran; `running` once its route started (or its answer is decided without one).
 */
export class EdgeExchange implements Connection {
  aborted = false;
  onAbort: (() => void) | null = null;
  running = false;
  settled = false;
  answered = false;
  /** Reading was paused while the request runs (a held connection). */
  paused = false;
  /** A large body of its own, freed once the request is over and its route is done with it (free-now.ts). */
  ownedBody: Buffer | null = null;
  routeDone = false;
  /** Body bytes this request holds of the budget, given back once the route is done with them. */
  budgeted = 0;
  /** A body slower than the pace ends the connection; the clock stops once the body is whole or answered. */
  readonly clock: BodyClock;
  /** Set right after the exchange is made (app.prepare runs once the exchange counts as in flight). */
  prepared!: Prepared;

  constructor(
    readonly res: HttpResponse,
    readonly listener: ListenerState,
    readonly method: string,
    /** The body's declared length: null when none was declared. */
    readonly declared: number | null,
    pace: BodyPace,
    headAt: number,
  ) {
    this.clock = new BodyClock(pace, headAt, () => this.answered || this.aborted || res.close());
  }

  /** uWS's onAborted: the client is gone. */
  abort(): void {
    this.clock.stop();
    this.aborted = true;
    this.onAbort?.();
    this.prepared.abort();
    if (!this.running) {
      this.giveBack();
      this.settle();
    }
  }

  freeBody(): void {
    if (this.ownedBody !== null && this.settled && this.routeDone) freeNow(this.ownedBody);
    if (this.settled && this.routeDone) this.ownedBody = null;
  }

  settle(): void {
    if (this.settled) return;
    this.settled = true;
    this.freeBody();
    const listener = this.listener;
    if (--listener.inflight === 0 && listener.idleWaiters.length > 0) {
      for (const wake of listener.idleWaiters) wake();
      listener.idleWaiters = [];
    }
  }

  giveBack(): void {
    if (this.budgeted > 0) this.listener.bodyBudget!.give(this.budgeted);
    this.budgeted = 0;
  }

  /** `linger`: the body was not read whole; keep reading it (bounded) so the client receives the answer. */
  send(response: EdgeResponse, close: boolean, linger = false): void {
    if (this.answered) return;
    this.answered = true;
    this.clock.stop();
    if (this.aborted) return this.settle();
    const res = this.res;
    if (response.stream) {
      // A held connection is read again once a streamed answer starts: a paused socket never reports its
      // client leaving, and a stream (a pairing request's) lasts as long as its client stays. uWS then ends
      // the connection at a request pipelined behind it, as behind a gateway call (node:http queues it).
      if (this.paused) res.resume();
      this.paused = false;
      streamResponse(res, this, response, () => this.settle());
    } else {
      const declared = this.declared;
      const lingers = linger && !close && (declared === null || declared <= LINGER_MAX);
      writeResponse(res, response, lingers ? 'linger' : close || linger ? 'close' : 'keep', this.paused);
      this.settle();
    }
  }

  failEarly(err: ServiceError): void {
    this.send(this.prepared.fail(err), false, true);
  }

  sendLater(pending: Promise<EdgeResponse>, close: boolean, linger = false): Promise<void> {
    return pending.then(
      (response) => this.send(response, close, linger),
      // `run` answers its own errors; this only guards the adapter against a bug there.
      (err: unknown) => this.send(this.prepared.fail(toServiceError(err)), true),
    );
  }

  /**
   * A write starts once uWS has parsed everything that arrived with it. uWS closes a connection on which a
   * request arrives while an earlier one is unanswered, so a write followed in the same packet by a
   * pipelined request is refused before it acts, not committed with nobody to tell (node:http instead
   * serves the pipelined request after this one's answer, server-node.ts). A management write then holds
   * the connection: the next request is read once this one is answered (uWS pause/resume).
   */
  begin(run: () => void): void {
    if (!this.prepared.holdConnection && READS.has(this.method)) {
      this.running = true;
      return run();
    }
    afterAnswers(() => {
      if (this.aborted) return;
      this.running = true;
      if (this.prepared.holdConnection) {
        this.res.pause();
        this.paused = true;
      }
      run();
    });
  }
}
