import { toServiceError } from '../../protocol/errors.ts';
import type { UsageAcceleration, UsageReport } from '../../protocol/gateway.ts';
import type { FromWorker } from '../../protocol/relay.ts';

// One call's way back to the edge over the worker port: a whole answer in one message, or a head followed by
// SSE text coalesced per event-loop turn (tokens arrive one at a time; a message each would cost more than
// the tokens). Buffers are transferred, not copied.

export interface CallOutput {
  whole(status: number, body: object, usage: UsageReport | null, acceleration?: UsageAcceleration): void;
  head(status: number, headers: Record<string, string>): void;
  write(text: string): void;
  end(usage: UsageReport | null, acceleration?: UsageAcceleration): void;
  fail(err: unknown, usage: UsageReport | null): void;
  /** The usage of a generation the abort stopped: what it had evaluated and generated until then. */
  stopped(usage: UsageReport): void;
  /**
   * The edge's abort: nothing but the call's `aborted` message reaches the edge from now on, and `settled`
   * posts it. False when the call's last message has left already (it crossed the abort): nothing follows.
   */
  abort(): boolean;
  /** The call is over: after an abort, its `aborted` message leaves with the usage a stopped generation had. */
  settled(): void;
}

const encoder = new TextEncoder();

function toBuffer(text: string): ArrayBuffer {
  const bytes = encoder.encode(text);
  return bytes.buffer.byteLength === bytes.byteLength ? bytes.buffer : bytes.slice().buffer;
}

export function callOutput(id: number, post: (m: FromWorker, transfer?: ArrayBuffer[]) => void): CallOutput {
  let pending: string[] = [];
  let scheduled = false;
  let silent = false;
  let finished = false;
  let usageAtStop: UsageReport | null = null;

  const flush = () => {
    scheduled = false;
    if (pending.length === 0 || silent) return;
    const chunk = toBuffer(pending.join(''));
    pending = [];
    post({ t: 'data', id, chunks: [chunk] }, [chunk]);
  };

  return {
    whole(status, body, usage, acceleration) {
      if (silent) return;
      finished = true;
      const buf = toBuffer(JSON.stringify(body));
      post(
        {
          t: 'whole',
          id,
          status,
          headers: { 'content-type': 'application/json' },
          body: buf,
          end: { usage, responseId: null, ...(acceleration && { acceleration }) },
        },
        [buf],
      );
    },
    head(status, headers) {
      if (!silent) post({ t: 'head', id, status, headers });
    },
    write(text) {
      pending.push(text);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    end(usage, acceleration) {
      flush();
      if (silent) return;
      finished = true;
      post({ t: 'end', id, end: { usage, responseId: null, ...(acceleration && { acceleration }) } });
    },
    fail(err, usage) {
      flush();
      if (silent) return;
      finished = true;
      post({ t: 'error', id, error: toServiceError(err).toPayload(), usage });
    },
    stopped(usage) {
      usageAtStop = usage;
    },
    abort() {
      if (finished) return false;
      silent = true;
      pending = [];
      return true;
    },
    settled() {
      if (silent && !finished) {
        finished = true;
        post({ t: 'aborted', id, usage: usageAtStop });
      }
    },
  };
}
