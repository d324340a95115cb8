import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RecordedRequest } from './http.ts';

// Streamed answers: SSE framing, the writer that sends one event per write, and what a test can observe and
// break about a stream (slow it down, cut it, inject an in-stream error, see who closed it and when).

/** `data: <json>` — OpenAI's chat chunks carry no event name. */
export function sseData(payload: unknown): string {
  return `data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`;
}

/** `event: <name>` plus `data: <json>` — Anthropic's and the Responses API's typed events. */
export function sseEvent(name: string, payload: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`;
}

export interface InStreamError {
  /** The provider's error type (`server_error`, `overloaded_error`...). */
  type: string;
  message: string;
}

export interface StreamReply {
  status: number;
  /** One SSE event each, written separately so a client sees them as separate chunks. */
  events: readonly string[];
  /** How this route reports an error once the stream has begun (`event: error` for Anthropic...). */
  errorEvent: (error: InStreamError, eventsSent: number) => string;
  headers?: Record<string, string>;
}

export type StreamEndCause = 'completed' | 'client-closed' | 'destroyed' | 'errored';

export interface StreamEnd {
  by: StreamEndCause;
  eventsSent: number;
  /** `performance.now()` when the fake saw the stream end, to compare with a test's own clock. */
  at: number;
}

export interface StreamRecord {
  request: RecordedRequest;
  eventsSent: number;
  /** Null while the stream is open. */
  end: StreamEnd | null;
  ended: Promise<StreamEnd>;
}

export type StreamOverride =
  | { kind: 'destroy'; afterChunks: number; chunkDelayMs: number }
  | { kind: 'slow'; chunkDelayMs: number }
  | { kind: 'linger'; endDelayMs: number }
  | { kind: 'error'; afterChunks: number; error: InStreamError };

export interface StreamControls {
  /** Every streamed answer, oldest first. */
  streams: StreamRecord[];
  /** The next streamed answer sends `afterChunks` events, then the socket is destroyed without a clean end. */
  failMidStreamNext(options: { afterChunks: number; chunkDelayMs?: number }): void;
  /** The next streamed answer waits `chunkDelayMs` before each event after the first. */
  slowStreamNext(options: { chunkDelayMs: number }): void;
  /**
   * The next streamed answer sends all its events at once, then waits `endDelayMs` before it ends the
   * response (a server that closes its stream late, after its last event).
   */
  lingerNext(options: { endDelayMs: number }): void;
  /**
   * The next streamed answer sends `afterChunks` events, then the provider's in-stream error, then ends.
   * Overrides whose `afterChunks` reaches the stream's length leave it whole.
   */
  streamErrorNext(options: { afterChunks: number; type?: string; message?: string }): void;
  /** Resolves with the first stream to start after this call: call it before sending the request. */
  nextStream(): Promise<StreamRecord>;
  /** How the most recent stream ended (waits while it is open); rejects when none has started. */
  lastStreamEnded(): Promise<StreamEnd>;
  /** Whether the most recent stream has ended because its client closed the connection. */
  lastStreamClosedByClient(): boolean;
}

export interface StreamHub extends StreamControls {
  write(res: ServerResponse, reply: StreamReply, request: RecordedRequest): Promise<void>;
}

function writeAndFlush(res: ServerResponse, chunk: string, closed: AbortSignal): Promise<void> {
  // Resolves once the chunk is handed to the socket, so a destroy that follows cannot swallow it; or as soon
  // as the connection closes, whose write callback may never come.
  return new Promise((resolve) => {
    const done = (): void => {
      closed.removeEventListener('abort', done);
      resolve();
    };
    closed.addEventListener('abort', done, { once: true });
    res.write(chunk, done);
  });
}

export function createStreamHub(defaultError: InStreamError): StreamHub {
  const streams: StreamRecord[] = [];
  const overrides: StreamOverride[] = [];
  const waiters: Array<{ index: number; resolve: (record: StreamRecord) => void }> = [];

  async function write(res: ServerResponse, reply: StreamReply, request: RecordedRequest): Promise<void> {
    const override = overrides.shift();
    let finish: (end: StreamEnd) => void = () => undefined;
    const record: StreamRecord = { request, eventsSent: 0, end: null, ended: new Promise((r) => (finish = r)) };
    const end = (by: StreamEndCause): void => {
      if (record.end !== null) return;
      record.end = { by, eventsSent: record.eventsSent, at: performance.now() };
      finish(record.end);
    };
    streams.push(record);
    for (const waiter of waiters.splice(0)) {
      if (waiter.index === streams.length - 1) waiter.resolve(record);
      else waiters.push(waiter);
    }

    const closed = new AbortController();
    res.on('finish', () => end('completed'));
    res.on('close', () => {
      // Every other way a stream ends is ours and recorded first: an early close is the client's (or close()).
      end(res.writableFinished ? 'completed' : 'client-closed');
      closed.abort();
    });
    res.writeHead(reply.status, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...reply.headers,
    });
    res.flushHeaders();

    const delay =
      override === undefined || override.kind === 'error' || override.kind === 'linger' ? 0 : override.chunkDelayMs;
    const stopAt =
      override === undefined || override.kind === 'slow' || override.kind === 'linger'
        ? Infinity
        : override.afterChunks;
    for (const [index, event] of reply.events.entries()) {
      if (index >= stopAt) break;
      if (index > 0 && delay > 0) {
        const slept = await sleep(delay, true, { signal: closed.signal }).catch(() => false);
        if (!slept) return;
      }
      if (closed.signal.aborted) return;
      await writeAndFlush(res, event, closed.signal);
      record.eventsSent++;
    }
    if (closed.signal.aborted) return;
    if (override?.kind === 'destroy' && override.afterChunks < reply.events.length) {
      end('destroyed');
      res.destroy();
      return;
    }
    if (override?.kind === 'error' && override.afterChunks < reply.events.length) {
      await writeAndFlush(res, reply.errorEvent(override.error, record.eventsSent), closed.signal);
      end('errored');
    }
    if (override?.kind === 'linger') {
      const slept = await sleep(override.endDelayMs, true, { signal: closed.signal }).catch(() => false);
      if (!slept) return;
    }
    res.end();
  }

  return {
    streams,
    write,
    failMidStreamNext({ afterChunks, chunkDelayMs = 0 }) {
      overrides.push({ kind: 'destroy', afterChunks, chunkDelayMs });
    },
    slowStreamNext({ chunkDelayMs }) {
      overrides.push({ kind: 'slow', chunkDelayMs });
    },
    lingerNext({ endDelayMs }) {
      overrides.push({ kind: 'linger', endDelayMs });
    },
    streamErrorNext({ afterChunks, type = defaultError.type, message = defaultError.message }) {
      overrides.push({ kind: 'error', afterChunks, error: { type, message } });
    },
    nextStream() {
      const index = streams.length;
      return new Promise((resolve) => waiters.push({ index, resolve }));
    },
    lastStreamEnded() {
      const last = streams.at(-1);
      return last === undefined ? Promise.reject(new Error('no stream has started')) : last.ended;
    },
    lastStreamClosedByClient() {
      return streams.at(-1)?.end?.by === 'client-closed';
    },
  };
}
