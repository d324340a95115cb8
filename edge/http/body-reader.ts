import type { HttpResponse } from '@trufflesuite/uws-js-unofficial';
import { ClientClosed } from '../../protocol/errors.ts';
import { tooLarge } from './app.ts';
import type { Connection } from './answer-writer.ts';
import type { BodyClock } from './body-pace.ts';
import type { BodyStream } from './types.ts';

// The body half of server.ts: a request body read from uWS. The answering half is answer-writer.ts.

/**
 * Copies `chunk` into `into` at `at`. Buffer#fill with a source exactly as long as the range is one memcpy,
 * where TypedArray#set into a SharedArrayBuffer (an arena slot) is V8's word-by-word relaxed-atomic copy:
 * measured under load, about 80 us instead of about 20 for a 256 KB body.
 */
export function copyInto(into: Buffer, at: number, chunk: ArrayBuffer): void {
  if (chunk.byteLength > 0) into.fill(new Uint8Array(chunk), at, at + chunk.byteLength);
}

// Bodies larger than this are read into a buffer of their own (see server.ts `listen`).
export const OWNED_BODY_MIN = 64 * 1024;

// A streamed upload is read with backpressure: the socket is paused while more than this is queued.
const UPLOAD_HIGH_WATER = 512 * 1024;

/** The request body as an async iterable; the socket pauses while the consumer lags, and the limit holds. */
export function bodyStream(res: HttpResponse, conn: Connection, limit: number, hasBody: boolean, clock: BodyClock): BodyStream & { complete(): boolean; discard(): void } {
  const queue: Uint8Array[] = [];
  let queued = 0;
  let received = 0;
  let ended = !hasBody;
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  let paused = false;
  // Once the answer is on its way the response may not be touched (no pause or resume) and the rest of the
  // body is dropped as it arrives.
  let discarding = false;
  const notify = () => {
    wake?.();
    wake = null;
  };
  if (hasBody) {
    res.onData((chunk, isLast) => {
      if (discarding) return;
      clock.add(chunk.byteLength, isLast);
      received += chunk.byteLength;
      if (received > limit) failure = tooLarge(limit);
      else {
        queue.push(new Uint8Array(chunk.slice(0)));
        queued += chunk.byteLength;
        if (queued > UPLOAD_HIGH_WATER && !paused) {
          paused = true;
          res.pause();
          clock.pause();
        }
      }
      if (isLast) ended = true;
      notify();
    });
  }
  const previous = conn.onAbort;
  conn.onAbort = () => {
    previous?.();
    failure ??= new ClientClosed();
    notify();
  };
  return {
    complete: () => ended && failure === null,
    discard() {
      discarding = true;
      clock.stop();
      queue.length = 0;
      queued = 0;
      failure ??= new ClientClosed();
      notify();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (failure) throw failure;
        const next = queue.shift();
        if (next) {
          queued -= next.byteLength;
          if (paused && queued < UPLOAD_HIGH_WATER / 2 && !conn.aborted && !discarding) {
            paused = false;
            res.resume();
            clock.resume();
          }
          yield next;
          continue;
        }
        if (ended) return;
        await new Promise<void>((r) => (wake = r));
      }
    },
  };
}
