import { ClientClosed, errorEnvelope, type ServiceError } from '../../protocol/errors.ts';
import type { UsageAcceleration, UsageReport } from '../../protocol/gateway.ts';
import { chunkBytes, isAsciiText, STREAM_CREDIT_STEP, wireChunk, type Chunk, type RelayEnd, type RelayRequest } from '../../protocol/relay.ts';
import type { RelayHandle, RelayPool } from '../../workers/proxy/relay-pool.ts';
import type { RouteResult } from '../router.ts';
import type { ResponseWriter } from '../types.ts';

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

export interface RelayHooks {
  onAbort(callback: () => void): void;
  /** The upstream named the response it created, possibly long before the call ends. */
  onResponseId?(responseId: string): void;
  /** The answer's status and headers arrived (before any byte reaches the client): rate limits, latency. */
  onHead?(status: number, headers: Readonly<Record<string, string>>): void;
}

export function startRelay(pool: RelayPool, req: RelayRequest, hooks: RelayHooks): RelayCall {
  let resolveResult!: (r: RouteResult) => void;
  let rejectResult!: (e: unknown) => void;
  const result = new Promise<RouteResult>((resolve, reject) => {
    resolveResult = resolve;
    rejectResult = reject;
  });
  let resolveDone!: (o: RelayOutcome) => void;
  const done = new Promise<RelayOutcome>((resolve) => (resolveDone = resolve));

  let writer: ResponseWriter | null = null;
  let backlog: Chunk[] = [];
  /** How the stream ends when its end arrived before the client's writer: given the bytes held until then. */
  let pendingEnd: ((backlog: Chunk[]) => void) | null = null;
  let isSse = false;
  let headSeen = false;
  let paused = false;
  let finished = false;
  let unacked = 0;
  let ackWake: (() => void) | null = null;
  /** The client left: nothing more is written, and the call ends with whatever the worker's last message reports. */
  let clientGone = false;
  let backstop: NodeJS.Timeout | null = null;
  /** A last message held for the client's writer: what the call reports if the client leaves before it. */
  let heldEnd: { usage: UsageReport | null; responseId: string | null } | null = null;
  const finish = (o: RelayOutcome) => {
    if (finished) return;
    finished = true;
    if (backstop !== null) clearTimeout(backstop);
    ackWake?.();
    resolveDone(o);
  };
  const leftWith = (usage: UsageReport | null, responseId: string | null = null) => finish({ outcome: 'aborted', usage, responseId });
  const clientLeft = () => {
    if (clientGone) return;
    clientGone = true;
    if (handle.abort()) {
      backstop = setTimeout(() => leftWith(null), ABORT_USAGE_WAIT_MS);
      backstop.unref();
    } else leftWith(heldEnd?.usage ?? null, heldEnd?.responseId ?? null);
  };

  /** Stream bytes written to the client and not yet credited to the worker (see STREAM_WINDOW). */
  let uncredited = 0;
  const write = (chunks: Chunk[]) => {
    for (const chunk of chunks) {
      uncredited += typeof chunk === 'string' ? chunk.length : chunk.byteLength;
      if (!writer!.write(wireChunk(chunk)) && !paused) {
        paused = true;
        handle.pause();
      }
    }
    if (uncredited >= STREAM_CREDIT_STEP) {
      handle.credit(uncredited);
      uncredited = 0;
    }
  };
  /** The stream's last bytes go out with its end: one send, not one for the bytes and one for the end. */
  const writeAndEnd = (chunks: Chunk[]) => {
    const last = chunks.pop();
    write(chunks);
    writer!.end(last === undefined ? undefined : wireChunk(last));
  };

  /** The head of a stream whose route result waits for the rest of its message batch. */
  let pendingHead: { status: number; headers: Record<string, string> } | null = null;
  /** Hands the stream to the client's writer, unless its end came in the same batch and answered at once. */
  const publishStream = () => {
    if (pendingHead === null) return;
    const { status, headers } = pendingHead;
    pendingHead = null;
    resolveResult({
      stream(out) {
        writer = out;
        out.head(status, headers);
        out.onWritable(() => {
          if (paused) {
            paused = false;
            handle.resume();
          }
        });
        out.onAbort(clientLeft);
        const early = backlog;
        backlog = [];
        if (pendingEnd === null) write(early);
        else pendingEnd(early);
      },
    });
  };

  const handle = pool.start(req, {
    created: (responseId) => hooks.onResponseId?.(responseId),
    ack(bytes) {
      unacked -= bytes;
      if (unacked <= UPLOAD_WINDOW / 2) {
        ackWake?.();
        ackWake = null;
      }
    },
    whole(status, headers, body, end: RelayEnd) {
      if (clientGone) return leftWith(end.usage, end.responseId);
      hooks.onHead?.(status, headers);
      resolveResult({ status, headers, raw: typeof body === 'string' ? body : new Uint8Array(body) });
      finish(completed(end));
    },
    head(status, headers) {
      if (clientGone) return;
      headSeen = true;
      hooks.onHead?.(status, headers);
      isSse = (headers['content-type'] ?? '').includes('text/event-stream');
      // The rest of this message batch may hold the whole stream: then `end` answers at once, as for a whole
      // answer. Otherwise the stream is handed to the client's writer once the batch is delivered.
      pendingHead = { status, headers };
      queueMicrotask(publishStream);
    },
    data(chunks) {
      if (clientGone) return;
      if (writer) write(chunks);
      else backlog.push(...chunks);
    },
    end(end, chunks) {
      if (clientGone) return leftWith(end.usage, end.responseId);
      const outcome = completed(end);
      if (pendingHead !== null) {
        const { status, headers } = pendingHead;
        pendingHead = null;
        const all = chunks === undefined ? backlog : backlog.concat(chunks);
        backlog = [];
        resolveResult({ status, headers, raw: joinChunks(all) });
        finish(outcome);
        return;
      }
      const close = (rest: Chunk[]) => {
        writeAndEnd(rest);
        finish(outcome);
      };
      if (writer) close(chunks ?? []);
      else {
        if (chunks !== undefined) backlog.push(...chunks);
        pendingEnd = close;
        heldEnd = end;
      }
    },
    error(error, usage) {
      if (clientGone) return leftWith(usage);
      if (!headSeen) {
        // Nothing reached the client yet: the answer is the error envelope.
        rejectResult(error);
        finish({ outcome: 'failed', usage, responseId: null });
        return;
      }
      const fail = (rest: Chunk[]) => {
        write(rest);
        if (isSse) writer!.end(sseErrorEvent(error, req.requestId));
        else writer!.abort();
        finish({ outcome: 'failed', usage, responseId: null });
      };
      if (writer) fail([]);
      else {
        pendingEnd = fail;
        heldEnd = { usage, responseId: null };
      }
    },
    aborted: (usage) => leftWith(usage),
  });

  hooks.onAbort(() => {
    clientLeft();
    rejectResult(new ClientClosed());
  });
  const upload: UploadChannel = {
    send(chunk) {
      unacked += chunk.byteLength;
      handle.body(chunk);
    },
    async ready() {
      while (unacked > UPLOAD_WINDOW && !finished) await new Promise<void>((r) => (ackWake = r));
    },
    end: () => handle.body(null),
  };
  return { result, done, handle, upload };
}
