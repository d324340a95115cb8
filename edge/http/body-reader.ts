import type { HttpResponse } from 'uws-pack';
import { ClientClosed, toServiceError } from '../../protocol/errors.ts';
import { overloaded, tooLarge } from './app.ts';
import type { Connection, EdgeExchange } from './answer-writer.ts';
import type { BodyClock } from './body-pace.ts';
import { freeNow } from './free-now.ts';
import type { BodyStream } from './types.ts';

// The body half of server.ts: a request body read from uWS, whole into one buffer (or an arena slot), or as
// a stream with backpressure, within the route's limit and the listener's body budget. What it read goes to
// the route through the exchange (answer-writer.ts), which answers.

/**
 * Copies `chunk` into `into` at `at`. Buffer#fill with a source exactly as long as the range is one memcpy,
 * where TypedArray#set into a SharedArrayBuffer (an arena slot) is V8's word-by-word relaxed-atomic copy:
 * measured under load, about 80 us instead of about 20 for a 256 KB body.
 */
function copyInto(into: Buffer, at: number, chunk: ArrayBuffer): void {
  if (chunk.byteLength > 0) into.fill(new Uint8Array(chunk), at, at + chunk.byteLength);
}

// Bodies larger than this are read into a buffer of their own (see readWhole).
const OWNED_BODY_MIN = 64 * 1024;

// A streamed upload is read with backpressure: the socket is paused while more than this is queued.
const UPLOAD_HIGH_WATER = 512 * 1024;

/** The request body as an async iterable; the socket pauses while the consumer lags, and the limit holds. */
function bodyStream(
  res: HttpResponse,
  conn: Connection,
  limit: number,
  hasBody: boolean,
  clock: BodyClock,
): BodyStream & { complete(): boolean; discard(): void } {
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

/**
 * Runs a route that reads its body as a stream. An answer sent before the upload was read whole (an early
 * error) lingers over the rest of it.
 */
export function readStreamed(ex: EdgeExchange, limit: number, hasBody: boolean): void {
  const stream = bodyStream(ex.res, ex, limit, hasBody, ex.clock);
  ex.running = true;
  const complete = () => {
    const whole = stream.complete();
    stream.discard();
    return whole;
  };
  ex.prepared.runStream(stream).then(
    (response) => ex.send(response, false, !complete()),
    (err: unknown) => {
      complete();
      ex.send(ex.prepared.fail(toServiceError(err)), true);
    },
  );
}

/**
 * Reads a body whole, then runs the route with it. The body's declared length is held from the budget before
 * a byte is read; a chunked body takes its bytes as they come.
 */
export function readWhole(ex: EdgeExchange, limit: number, chunked: boolean): void {
  const { res, declared, prepared } = ex;
  const { arena, bodyBudget } = ex.listener;
  if (bodyBudget !== undefined && declared !== null) {
    if (!bodyBudget.take(declared)) {
      ex.running = true;
      ex.failEarly(overloaded('request bodies'));
      return;
    }
    ex.budgeted = declared;
  }
  // A declared length is read straight into one buffer. A large one owns its whole ArrayBuffer
  // (allocUnsafeSlow never hands out a slice of the shared pool), so a route can transfer it to a worker
  // without a copy; a small one goes to a worker as text anyway and may come from the pool. Bytes that do
  // not fit the declaration (uWS frames by Content-Length, so only defensively) are gathered in pieces.
  // A route that takes shared bodies gets a large one in a slot of the arena when one is free: no
  // allocation, so no garbage for V8 to collect. The slot is the request's until `run` settles (or the
  // read is abandoned), unless the route handed it to a relay worker, which frees it.
  const framed = declared !== null && declared > 0 && !chunked;
  const lease = framed && declared > OWNED_BODY_MIN && prepared.sharedBody ? (arena?.acquire(declared) ?? null) : null;
  let whole = framed
    ? (lease?.body ?? (declared > OWNED_BODY_MIN ? Buffer.allocUnsafeSlow(declared) : Buffer.allocUnsafe(declared)))
    : null;
  if (lease !== null) ex.onAbort = () => ex.running || lease.settle();
  else if (whole !== null && whole.length > OWNED_BODY_MIN) {
    // A client gone mid-body leaves its buffer to nobody: freed now, not at V8's next collection.
    ex.onAbort = () => {
      if (!ex.running && whole !== null) freeNow(whole);
      whole = null;
    };
  }
  let chunks: Buffer[] = [];
  let received = 0;
  res.onData((chunk, isLast) => {
    if (ex.answered) return;
    ex.clock.add(chunk.byteLength, isLast);
    const offset = received;
    received += chunk.byteLength;
    if (received > limit || (!framed && bodyBudget !== undefined && !bodyBudget.take(chunk.byteLength))) {
      // Refused while it streams in: nothing past the limit (or the budget) is buffered.
      whole = null;
      chunks = [];
      lease?.settle();
      ex.giveBack();
      ex.running = true;
      if (received > limit) ex.send(prepared.fail(tooLarge(limit)), true);
      else ex.failEarly(overloaded('request bodies'));
      return;
    }
    if (!framed && bodyBudget !== undefined) ex.budgeted += chunk.byteLength;
    // uWS neuters the ArrayBuffer after this callback returns, so it is copied.
    if (whole !== null && received <= whole.length) copyInto(whole, offset, chunk);
    else {
      if (whole !== null) chunks.push(Buffer.from(whole.subarray(0, offset)));
      lease?.settle();
      whole = null;
      chunks.push(Buffer.from(new Uint8Array(chunk)));
    }
    if (!isLast) return;
    const body =
      whole !== null
        ? received === whole.length
          ? whole
          : whole.subarray(0, received)
        : chunks.length === 1
          ? chunks[0]!
          : Buffer.concat(chunks, received);
    whole = null;
    chunks = [];
    if (lease === null && body.length > OWNED_BODY_MIN) ex.ownedBody = body;
    ex.begin(() => {
      const ran = prepared.run(body);
      const done = () => {
        ex.giveBack();
        ex.routeDone = true;
        ex.freeBody();
      };
      ran.then(done, done);
      if (lease !== null) ran.then(lease.settle, lease.settle);
      void ex.sendLater(ran, false);
    });
  });
}
