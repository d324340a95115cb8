import type { ServiceError } from '../../protocol/errors.ts';
import type { UsageReport } from '../../protocol/gateway.ts';
import type { Chunk, RelayEnd, RelayRequest } from '../../protocol/relay.ts';
import { OMITTED_TOOLS_HEADER } from '../../protocol/translation.ts';
import type { RelayHandle, RelayPool, RelaySink } from '../shared/relay-sink.ts';

// The warning a translated call logs when it left some of the client's tools out of the upstream call
// (docs/api.md, `switchyard-omitted-tools`). The relay worker names them in the answer's head; this wrapper of
// the edge's relay pool, on the edge thread where the log is, sees that head and logs the request ID and the
// tool types, never a tool's contents. Calls that cannot omit a tool pass through unwrapped.

/** What this needs of the service's logger (pino's `warn`). */
export interface WarnLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** `pool`, with every translated Responses call's omitted tools logged once, at its answer's head. */
export function logOmittedTools(pool: RelayPool, log: WarnLog): RelayPool {
  return {
    ...(pool.arena && { arena: pool.arena }),
    start(req: RelayRequest, sink: RelaySink): RelayHandle {
      if (req.translation === undefined || req.op !== 'responses.create') return pool.start(req, sink);
      return pool.start(req, new OmittedToolsSink(sink, req.requestId, log));
    },
    close: () => pool.close(),
  };
}

/** A class, not a literal of closures: one allocation per wrapped call. */
class OmittedToolsSink implements RelaySink {
  constructor(
    private readonly inner: RelaySink,
    private readonly requestId: string,
    private readonly log: WarnLog,
  ) {}

  private saw(headers: Record<string, string>): void {
    const omitted = headers[OMITTED_TOOLS_HEADER];
    if (omitted === undefined || omitted === '') return;
    try {
      this.log.warn(
        { reqId: this.requestId, omittedTools: omitted.split(',') },
        'tools left out of a translated call: the upstream cannot run them',
      );
    } catch {
      // A log that fails never changes the client's answer.
    }
  }

  whole(status: number, headers: Record<string, string>, body: ArrayBuffer | string, end: RelayEnd): void {
    this.saw(headers);
    this.inner.whole(status, headers, body, end);
  }
  head(status: number, headers: Record<string, string>): void {
    this.saw(headers);
    this.inner.head(status, headers);
  }
  data(chunks: Chunk[], closing?: boolean): void {
    this.inner.data(chunks, closing);
  }
  end(end: RelayEnd, chunks?: Chunk[]): void {
    this.inner.end(end, chunks);
  }
  error(error: ServiceError, usage: UsageReport | null): void {
    this.inner.error(error, usage);
  }
  aborted(usage: UsageReport | null): void {
    this.inner.aborted(usage);
  }
  ack(bytes: number): void {
    this.inner.ack?.(bytes);
  }
  created(responseId: string): void {
    this.inner.created?.(responseId);
  }
}
