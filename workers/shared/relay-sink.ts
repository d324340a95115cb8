import { ServiceError, type ErrorPayload } from '../../protocol/errors.ts';
import type { UsageReport } from '../../protocol/gateway.ts';
import type { Chunk, FromWorker, RelayEnd, RelayRequest } from '../../protocol/relay.ts';
import type { CallTable } from '../../state/call-table.ts';
import type { BodyArena } from './body-arena.ts';

// What a relay pool is to its callers, whoever runs the calls (the proxy's relay workers, the embedded
// runtime's worker, a pool across a MessagePort): the pool, a call's handle, the sink its answer goes to, and
// how one worker message reaches its sink.

export interface RelaySink {
  whole(status: number, headers: Record<string, string>, body: ArrayBuffer | string, end: RelayEnd): void;
  head(status: number, headers: Record<string, string>): void;
  /** `closing`: these chunks complete the stream's closing event (see FromWorker `data`). */
  data(chunks: Chunk[], closing?: boolean): void;
  /** `chunks`: the stream's last bytes, written before it ends. */
  end(end: RelayEnd, chunks?: Chunk[]): void;
  error(error: ServiceError, usage: UsageReport | null): void;
  /** The call ended on the edge's abort, with the usage reported until then. */
  aborted(usage: UsageReport | null): void;
  /** Upload flow control: bytes the worker has passed upstream. */
  ack?(bytes: number): void;
  /** A streamed create named its response. */
  created?(responseId: string): void;
}

export interface RelayHandle {
  /** The next chunk of a streamed upload; null ends it. */
  body(chunk: ArrayBuffer | null): void;
  pause(): void;
  resume(): void;
  /** Stream bytes written to the client since the last credit (see STREAM_WINDOW). */
  credit(bytes: number): void;
  /**
   * The client left: stop the upstream call. True when the call's last message is still to come (whatever it
   * is, the sink hears of it: `aborted` with the usage so far, or an end or error that crossed the abort);
   * false when no more sink calls follow.
   */
  abort(): boolean;
}

export interface RelayPool {
  /** Where large request bodies go for the workers (see body-arena.ts); a pool without one takes them as bytes. */
  readonly arena?: BodyArena;
  start(req: RelayRequest, sink: RelaySink): RelayHandle;
  /**
   * Ends every call still running (each with its usage so far, as `OVERLOADED` "shutting down"), waiting at
   * most `graceMs` for the workers' last messages, then stops the workers. A later call waits for the first.
   */
  close(graceMs?: number): Promise<void>;
}

/** What a call still running when the pool closes ends with, carrying the usage its stream had reported. */
const shutdownError = () =>
  new ServiceError('OVERLOADED', 'The service is shutting down: this answer was cut short.', {
    headers: { 'retry-after': '1' },
  });

/**
 * Hands one worker message to the sink it belongs to; a finished call leaves `inflight`. `closing`: the pool
 * aborted this call because the service is stopping, so its `aborted` (with the usage so far) is a failure
 * the client must hear of, not a client that left.
 */
export function deliverRelayMessage(
  m: Exclude<FromWorker, { t: 'free' }>,
  inflight: CallTable<RelaySink>,
  closing = false,
): void {
  const sink = inflight.get(m.id);
  if (!sink) return;
  switch (m.t) {
    case 'whole':
      inflight.delete(m.id);
      sink.whole(m.status, m.headers, m.body, m.end);
      return;
    case 'head':
      sink.head(m.status, m.headers);
      return;
    case 'data':
      sink.data(m.chunks, m.closing === true);
      return;
    case 'end':
      inflight.delete(m.id);
      sink.end(m.end, m.chunks);
      return;
    case 'error':
      inflight.delete(m.id);
      sink.error(ServiceError.fromPayload(m.error as ErrorPayload), m.usage);
      return;
    case 'aborted':
      inflight.delete(m.id);
      if (closing) sink.error(shutdownError(), m.usage);
      else sink.aborted(m.usage);
      return;
    case 'ack':
      sink.ack?.(m.bytes);
      return;
    case 'created':
      sink.created?.(m.responseId);
      return;
  }
}
