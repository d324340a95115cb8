import { ClientClosed, errorEnvelope, type ServiceError } from '../../protocol/errors.ts';
import { redactSecrets } from '../../protocol/redact.ts';
import type { UsageAcceleration, UsageReport } from '../../protocol/gateway.ts';
import {
  chunkBytes,
  isAsciiText,
  STREAM_CREDIT_STEP,
  wireChunk,
  type Chunk,
  type RelayEnd,
  type RelayRequest,
} from '../../protocol/relay.ts';
import type { RelayHandle, RelayPool, RelaySink } from '../../workers/shared/relay-sink.ts';
import type { RouteResult } from '../http/router.ts';
import type { ResponseWriter } from '../http/types.ts';

// Turns a relay (worker messages) into a route result: an error before the head becomes our envelope; a
// whole answer, or a stream that arrived whole in one message batch, is written at once; any other stream
// is written as it comes, pausing the worker while the client's socket is full, and a failure after the head
// ends an SSE stream with an `error` event.

export interface RelayOutcome {
  outcome: 'ok' | 'failed' | 'aborted';
  usage: UsageReport | null;
  responseId: string | null;
  acceleration?: UsageAcceleration;
}

export interface RelayCall {
  /** Resolves with the route result when the head (or the whole answer, or an error) arrives. */
  result: Promise<RouteResult>;
  /** Resolves once the call is over, however it ended. */
  done: Promise<RelayOutcome>;
  /**
   * Calls `listener` once with the call's outcome, synchronously before the answer's last bytes are written (at
   * once when the call is already over): what must be recorded before the client has its whole answer (a limit's
   * settlement, journaled in the same stretch) goes here; the rest waits for `done`.
   */
  onOutcome(listener: (o: RelayOutcome) => void): void;
  handle: RelayHandle;
  upload: UploadChannel;
}

/** A streamed upload to the worker, with at most UPLOAD_WINDOW bytes not yet passed upstream. */
export interface UploadChannel {
  send(chunk: ArrayBuffer): void;
  /** Resolves when the window has room again (or the call is over). */
  ready(): Promise<void>;
  end(): void;
}

const UPLOAD_WINDOW = 2 * 1024 * 1024;
/** How long a call whose client left waits for the worker's last message (the usage so far) before it ends without. */
const ABORT_USAGE_WAIT_MS = 5_000;

const encoder = new TextEncoder();

/** The envelope as a terminal SSE event; its shape parses for styleA and styleB clients alike. */
export function sseErrorEvent(error: ServiceError, requestId: string): Uint8Array {
  return encoder.encode(`event: error\ndata: ${JSON.stringify(errorEnvelope(error, requestId))}\n\n`);
}

const completed = (end: RelayEnd): RelayOutcome => ({
  outcome: 'ok',
  usage: end.usage,
  responseId: end.responseId,
  ...(end.acceleration && { acceleration: end.acceleration }),
});

/** A stream's bytes as one body: an ASCII string when every chunk is one (no buffer to allocate). */
function joinChunks(chunks: Chunk[]): Uint8Array | string {
  if (chunks.length === 0) return '';
  if (chunks.length === 1) return wireChunk(chunks[0]!);
  if (chunks.every((c) => typeof c === 'string')) {
    const text = chunks.join('');
    if (isAsciiText(text)) return text;
  }
  return Buffer.concat(chunks.map(chunkBytes));
}

/**
 * The request log's view of an answer (edge/gateway/request-capture.ts): its head, then its bytes in the order the
 * client gets them, or the error it ended with. Present only for a call the log is on for.
 */
export interface AnswerCapture {
  head(status: number, headers: Readonly<Record<string, string>>, streamed: boolean): void;
  /** `text`: a string that is text (a whole answer's), not a chunk's latin1 bytes. */
  bytes(chunk: Chunk | Uint8Array | string, text?: boolean): void;
  failed(error: ServiceError): void;
}

export interface RelayHooks {
  onAbort(callback: () => void): void;
  /** The upstream named the response it created, possibly long before the call ends. */
  onResponseId?(responseId: string): void;
  /** The answer's status and headers arrived (before any byte reaches the client): rate limits, latency. */
  onHead?(status: number, headers: Readonly<Record<string, string>>): void;
  /**
   * A hook (or the client-abort handling) threw. The call goes on as if it had not: a bookkeeping failure
   * never changes the client's answer, and a throw here would reach a worker message handler or a socket
   * callback, where nothing catches it and the process dies (W2.6).
   */
  onHookError?(hook: RelayHookName, err: unknown, requestId: string): void;
  /** Set while the request log is on for the call's token; undefined otherwise (one member, one shape). */
  capture?: AnswerCapture | undefined;
}

export type RelayHookName = 'onAbort' | 'onResponseId' | 'onHead' | 'onOutcome' | 'capture';

function hookFailed(hooks: RelayHooks, hook: RelayHookName, err: unknown, requestId: string): void {
  try {
    if (hooks.onHookError) return hooks.onHookError(hook, err, requestId);
  } catch {
    // The report failed too; the fallback below still says something.
  }
  console.error(
    `switchyard: relay ${hook} of ${requestId} failed: ` +
      `${redactSecrets(err instanceof Error ? err.message : String(err))}`,
  );
}

/**
 * One relayed call on the edge: the relay pool's sink for its worker messages, and the state that turns them
 * into a route result. A class, not closures: under load every call built about twenty closures here, the
 * edge's largest allocation per request (bench/PROFILE.md, sixth session).
 */
class RelayRun implements RelaySink {
  readonly result: Promise<RouteResult>;
  readonly done: Promise<RelayOutcome>;
  readonly handle: RelayHandle;
  private resolveResult!: (r: RouteResult) => void;
  private rejectResult!: (e: unknown) => void;
  private resolveDone!: (o: RelayOutcome) => void;
  private writer: ResponseWriter | null = null;
  private backlog: Chunk[] = [];
  /** How the stream ends when its end arrived before the client's writer: given the bytes held until then. */
  private pendingEnd: ((backlog: Chunk[]) => void) | null = null;
  private isSse = false;
  private headSeen = false;
  private paused = false;
  finished = false;
  unacked = 0;
  ackWake: (() => void) | null = null;
  /** The client left: nothing more is written, and the call ends with whatever the worker's last message reports. */
  private clientGone = false;
  private backstop: NodeJS.Timeout | null = null;
  /**
   * The stream's closing event has been written to the client (see FromWorker `data`): a client that leaves
   * after it had its whole answer, and the call is served, not aborted. `closingHeld`: it waits in the backlog.
   */
  private closingWritten = false;
  private closingHeld = false;
  /** A last message held for the client's writer: what the call reports if the client leaves before it. */
  private heldEnd: { usage: UsageReport | null; responseId: string | null } | null = null;
  /** Stream bytes written to the client and not yet credited to the worker (see STREAM_WINDOW). */
  private uncredited = 0;
  /** The head of a stream whose route result waits for the rest of its message batch. */
  private pendingHead: { status: number; headers: Record<string, string> } | null = null;
  private outcome: RelayOutcome | null = null;
  private outcomeListener: ((o: RelayOutcome) => void) | null = null;

  constructor(
    pool: RelayPool,
    private readonly req: RelayRequest,
    private readonly hooks: RelayHooks,
  ) {
    this.result = new Promise<RouteResult>((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
    this.done = new Promise<RelayOutcome>((resolve) => (this.resolveDone = resolve));
    this.handle = pool.start(req, this);
    hooks.onAbort(() => {
      this.leave();
      this.rejectResult(new ClientClosed());
    });
  }

  /** The client's socket closed: called from the edge's socket callbacks, so it never throws. */
  private leave(): void {
    try {
      this.clientLeft();
    } catch (err) {
      hookFailed(this.hooks, 'onAbort', err, this.req.requestId);
      // The worker may never hear of the abort: end the call now rather than leave it open.
      this.leftWith(this.heldEnd?.usage ?? null, this.heldEnd?.responseId ?? null);
    }
  }

  private sawHead(status: number, headers: Record<string, string>): void {
    if (this.hooks.onHead === undefined) return;
    try {
      this.hooks.onHead(status, headers);
    } catch (err) {
      hookFailed(this.hooks, 'onHead', err, this.req.requestId);
    }
  }

  /** Tells the request log, which never changes the client's answer (a throw is reported, as a hook's). */
  private captured(tell: (capture: AnswerCapture) => void): void {
    const capture = this.hooks.capture;
    if (capture === undefined) return;
    try {
      tell(capture);
    } catch (err) {
      hookFailed(this.hooks, 'capture', err, this.req.requestId);
    }
  }

  /** Called before the answer's last bytes are written (see RelayCall.onOutcome). */
  private finish(o: RelayOutcome): void {
    if (this.finished) return;
    this.finished = true;
    this.outcome = o;
    if (this.backstop !== null) clearTimeout(this.backstop);
    this.ackWake?.();
    if (this.outcomeListener !== null) this.tellOutcome(this.outcomeListener, o);
    this.resolveDone(o);
  }

  onOutcome(listener: (o: RelayOutcome) => void): void {
    if (this.outcome !== null) this.tellOutcome(listener, this.outcome);
    else this.outcomeListener = listener;
  }

  private tellOutcome(listener: (o: RelayOutcome) => void, o: RelayOutcome): void {
    try {
      listener(o);
    } catch (err) {
      hookFailed(this.hooks, 'onOutcome', err, this.req.requestId);
    }
  }

  private leftWith(usage: UsageReport | null, responseId: string | null = null): void {
    this.finish({ outcome: this.closingWritten ? 'ok' : 'aborted', usage, responseId });
  }

  private clientLeft(): void {
    if (this.clientGone) return;
    this.clientGone = true;
    if (this.handle.abort()) {
      this.backstop = setTimeout(() => this.leftWith(null), ABORT_USAGE_WAIT_MS);
      this.backstop.unref();
    } else this.leftWith(this.heldEnd?.usage ?? null, this.heldEnd?.responseId ?? null);
  }

  private write(chunks: Chunk[]): void {
    if (this.hooks.capture !== undefined) this.captured((c) => chunks.forEach((chunk) => c.bytes(chunk)));
    for (const chunk of chunks) {
      this.uncredited += typeof chunk === 'string' ? chunk.length : chunk.byteLength;
      if (!this.writer!.write(wireChunk(chunk)) && !this.paused) {
        this.paused = true;
        this.handle.pause();
      }
    }
    if (this.uncredited >= STREAM_CREDIT_STEP) {
      this.handle.credit(this.uncredited);
      this.uncredited = 0;
    }
  }

  /** The stream's last bytes go out with its end: one send, not one for the bytes and one for the end. */
  private writeAndEnd(chunks: Chunk[]): void {
    const last = chunks.pop();
    this.write(chunks);
    if (last !== undefined && this.hooks.capture !== undefined) this.captured((c) => c.bytes(last));
    this.writer!.end(last === undefined ? undefined : wireChunk(last));
  }

  /** Hands the stream to the client's writer, unless its end came in the same batch and answered at once. */
  private publishStream(): void {
    if (this.pendingHead === null) return;
    const { status, headers } = this.pendingHead;
    this.pendingHead = null;
    this.resolveResult({
      stream: (out) => {
        this.writer = out;
        out.head(status, headers);
        out.onWritable(() => {
          if (this.paused) {
            this.paused = false;
            this.handle.resume();
          }
        });
        out.onAbort(() => this.leave());
        const early = this.backlog;
        this.backlog = [];
        if (this.pendingEnd === null) {
          this.write(early);
          this.closingWritten = this.closingHeld;
        } else this.pendingEnd(early);
      },
    });
  }

  created(responseId: string): void {
    if (this.hooks.onResponseId === undefined) return;
    try {
      this.hooks.onResponseId(responseId);
    } catch (err) {
      hookFailed(this.hooks, 'onResponseId', err, this.req.requestId);
    }
  }

  ack(bytes: number): void {
    this.unacked -= bytes;
    if (this.unacked <= UPLOAD_WINDOW / 2) {
      this.ackWake?.();
      this.ackWake = null;
    }
  }

  whole(status: number, headers: Record<string, string>, body: ArrayBuffer | string, end: RelayEnd): void {
    if (this.clientGone) return this.leftWith(end.usage, end.responseId);
    this.sawHead(status, headers);
    if (this.hooks.capture !== undefined)
      this.captured((c) => {
        c.head(status, headers, false);
        c.bytes(body, true);
      });
    this.resolveResult({ status, headers, raw: typeof body === 'string' ? body : new Uint8Array(body) });
    this.finish(completed(end));
  }

  head(status: number, headers: Record<string, string>): void {
    if (this.clientGone) return;
    this.headSeen = true;
    this.sawHead(status, headers);
    if (this.hooks.capture !== undefined) this.captured((c) => c.head(status, headers, true));
    this.isSse = (headers['content-type'] ?? '').includes('text/event-stream');
    // The rest of this message batch may hold the whole stream: then `end` answers at once, as for a whole
    // answer. Otherwise the stream is handed to the client's writer once the batch is delivered.
    this.pendingHead = { status, headers };
    queueMicrotask(() => this.publishStream());
  }

  data(chunks: Chunk[], closing = false): void {
    if (this.clientGone) return;
    if (this.writer) {
      this.write(chunks);
      if (closing) this.closingWritten = true;
    } else {
      this.backlog.push(...chunks);
      if (closing) this.closingHeld = true;
    }
  }

  end(end: RelayEnd, chunks?: Chunk[]): void {
    if (this.clientGone) return this.leftWith(end.usage, end.responseId);
    const outcome = completed(end);
    if (this.pendingHead !== null) {
      const { status, headers } = this.pendingHead;
      this.pendingHead = null;
      const all = chunks === undefined ? this.backlog : this.backlog.concat(chunks);
      this.backlog = [];
      if (this.hooks.capture !== undefined) this.captured((c) => all.forEach((chunk) => c.bytes(chunk)));
      this.resolveResult({ status, headers, raw: joinChunks(all) });
      this.finish(outcome);
      return;
    }
    const close = (rest: Chunk[]) => {
      this.finish(outcome);
      this.writeAndEnd(rest);
    };
    if (this.writer) close(chunks ?? []);
    else {
      if (chunks !== undefined) this.backlog.push(...chunks);
      this.pendingEnd = close;
      this.heldEnd = end;
    }
  }

  error(error: ServiceError, usage: UsageReport | null): void {
    if (this.clientGone) return this.leftWith(usage);
    if (this.hooks.capture !== undefined) this.captured((c) => c.failed(error));
    if (!this.headSeen) {
      // Nothing reached the client yet: the answer is the error envelope.
      this.rejectResult(error);
      this.finish({ outcome: 'failed', usage, responseId: null });
      return;
    }
    const fail = (rest: Chunk[]) => {
      this.finish({ outcome: 'failed', usage, responseId: null });
      this.write(rest);
      if (this.isSse) {
        const event = sseErrorEvent(error, this.req.requestId);
        if (this.hooks.capture !== undefined) this.captured((c) => c.bytes(event));
        this.writer!.end(event, true);
      } else this.writer!.abort();
    };
    if (this.writer) fail([]);
    else {
      this.pendingEnd = fail;
      this.heldEnd = { usage, responseId: null };
    }
  }

  aborted(usage: UsageReport | null): void {
    this.leftWith(usage);
  }
}

/** A call's streamed upload, with at most UPLOAD_WINDOW bytes not yet passed upstream (the worker acks them). */
class RelayUpload implements UploadChannel {
  constructor(private readonly run: RelayRun) {}
  send(chunk: ArrayBuffer): void {
    this.run.unacked += chunk.byteLength;
    this.run.handle.body(chunk);
  }
  async ready(): Promise<void> {
    const run = this.run;
    while (run.unacked > UPLOAD_WINDOW && !run.finished) await new Promise<void>((r) => (run.ackWake = r));
  }
  end(): void {
    this.run.handle.body(null);
  }
}

export function startRelay(pool: RelayPool, req: RelayRequest, hooks: RelayHooks): RelayCall {
  const run = new RelayRun(pool, req, hooks);
  return {
    result: run.result,
    done: run.done,
    onOutcome: (listener) => run.onOutcome(listener),
    handle: run.handle,
    upload: new RelayUpload(run),
  };
}
