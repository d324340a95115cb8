import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startRelay } from '../../../edge/gateway/relay-response.ts';
import type { RouteResult } from '../../../edge/http/router.ts';
import type { ResponseWriter } from '../../../edge/http/types.ts';
import { ClientClosed, ServiceError } from '../../../protocol/errors.ts';
import { STREAM_CREDIT_STEP, type RelayRequest } from '../../../protocol/relay.ts';
import type { RelayPool, RelaySink } from '../../../workers/shared/relay-sink.ts';

// startRelay over a pool whose worker messages the test delivers by hand: a stream whose end arrives in the
// same message batch as its head is answered at once; one whose end comes later is written as it arrives.

const END = { usage: null, responseId: null };
const SSE = { 'content-type': 'text/event-stream' };

/** `lastMessageFollows`: what the pool's abort answers (a relay worker still sends its last message). */
function relay(lastMessageFollows = true): {
  sink: () => RelaySink;
  call: ReturnType<typeof startRelay>;
  aborts: () => number;
  credits: number[];
  clientLeaves: () => void;
} {
  let sink: RelaySink | null = null;
  let aborts = 0;
  const credits: number[] = [];
  const pool: RelayPool = {
    start(_req, s) {
      sink = s;
      return {
        body() {},
        pause() {},
        resume() {},
        credit: (bytes) => credits.push(bytes),
        abort: () => (aborts++, lastMessageFollows),
      };
    },
    close: async () => {},
  };
  let onAbort: (() => void) | null = null;
  const call = startRelay(pool, { requestId: 'req_test' } as RelayRequest, { onAbort: (cb) => (onAbort = cb) });
  return { sink: () => sink!, call, aborts: () => aborts, credits, clientLeaves: () => onAbort!() };
}

/** What a stream result writes, through a recording writer; `leave()` is the client closing its socket. */
function drive(result: RouteResult): { head: number; writes: string[]; ended: string | null; leave: () => void } {
  let onAbort: (() => void) | null = null;
  const seen = { head: 0, writes: [] as string[], ended: null as string | null, leave: () => onAbort!() };
  const writer: ResponseWriter = {
    head: (status) => (seen.head = status),
    write: (chunk) => (seen.writes.push(Buffer.from(chunk).toString('latin1')), true),
    end: (chunk) => (seen.ended = chunk === undefined ? '' : Buffer.from(chunk).toString('latin1')),
    abort() {},
    onWritable() {},
    onAbort: (cb) => (onAbort = cb),
  };
  result.stream!(writer);
  return seen;
}

const USAGE = {
  inputTokens: 12,
  outputTokens: null,
  cachedInputTokens: null,
  reasoningTokens: null,
  totalTokens: null,
  costUsd: null,
  toolCalls: {},
};

describe('startRelay', () => {
  it('answers a stream that arrived whole in one batch at once, its bytes joined, latin1 chunks intact', async () => {
    const { sink, call } = relay();
    const bytes = Buffer.from([0x64, 0x61, 0xff, 0x00, 0xe9]);
    sink().head(200, SSE);
    sink().data(['data: 1\n\n', bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer]);
    sink().end(END, [bytes.toString('latin1')]);
    const result = await call.result;
    assert.equal(result.stream, undefined);
    assert.equal(result.status, 200);
    assert.deepEqual(result.headers, SSE);
    assert.deepEqual(Buffer.from(result.raw as Uint8Array), Buffer.concat([Buffer.from('data: 1\n\n'), bytes, bytes]));
    assert.equal((await call.done).outcome, 'ok');
  });

  it('credits the worker with the stream bytes it wrote, a step at a time', async () => {
    const { sink, call, credits } = relay();
    sink().head(200, SSE);
    const seen = drive(await call.result);
    const chunk = 'x'.repeat(STREAM_CREDIT_STEP / 4);
    sink().data([chunk, chunk]);
    assert.deepEqual(credits, [], 'less than a step written: no message');
    sink().data([chunk, chunk, new Uint8Array(10).buffer as ArrayBuffer]);
    assert.deepEqual(credits, [STREAM_CREDIT_STEP + 10]);
    assert.equal(seen.writes.length, 5);
  });

  it('joins ASCII chunks into a string (no buffer) and anything else into the exact bytes', async () => {
    const ascii = relay();
    ascii.sink().head(200, SSE);
    ascii.sink().data(['data: 1\n\n', 'data: 2\n\n']);
    ascii.sink().end(END, ['data: [DONE]\n\n']);
    assert.equal((await ascii.call.result).raw, 'data: 1\n\ndata: 2\n\ndata: [DONE]\n\n');

    // "é" and "😀" as UTF-8, one split across two chunks: each chunk is a latin1 string of those bytes.
    const utf8 = Buffer.from('data: é😀\n\n', 'utf8');
    const mixed = relay();
    mixed.sink().head(200, SSE);
    mixed.sink().data(['data: 1\n\n', utf8.subarray(0, 9).toString('latin1')]);
    mixed.sink().end(END, [utf8.subarray(9).toString('latin1')]);
    const raw = (await mixed.call.result).raw;
    assert.ok(raw instanceof Uint8Array, 'non-ASCII bytes are not handed over as a string');
    assert.deepEqual(Buffer.from(raw), Buffer.concat([Buffer.from('data: 1\n\n'), utf8]));
  });

  it('writes ASCII chunks as strings and other chunks as their exact bytes', async () => {
    const { sink, call } = relay();
    sink().head(200, SSE);
    const chunks: (Uint8Array | string)[] = [];
    const result = await call.result;
    result.stream!({
      head() {},
      write: (chunk) => (chunks.push(chunk), true),
      end: (chunk) => void (chunk !== undefined && chunks.push(chunk)),
      abort() {},
      onWritable() {},
      onAbort() {},
    });
    const utf8 = Buffer.from('data: é\n\n', 'utf8');
    sink().data(['data: 1\n\n', utf8.toString('latin1')]);
    sink().end(END, ['data: [DONE]\n\n']);
    assert.equal(chunks[0], 'data: 1\n\n');
    assert.deepEqual(Buffer.from(chunks[1] as Uint8Array), utf8);
    assert.equal(chunks[2], 'data: [DONE]\n\n');
  });

  it('writes a stream whose end comes in a later batch as it arrives', async () => {
    const { sink, call } = relay();
    sink().head(200, SSE);
    sink().data(['data: 1\n\n']);
    const result = await call.result;
    assert.equal(result.raw, undefined);
    const seen = drive(result);
    assert.equal(seen.head, 200);
    assert.deepEqual(seen.writes, ['data: 1\n\n']);
    sink().data(['data: 2\n\n']);
    sink().end(END, ['data: [DONE]\n\n']);
    assert.deepEqual(seen.writes, ['data: 1\n\n', 'data: 2\n\n']);
    assert.equal(seen.ended, 'data: [DONE]\n\n');
    assert.equal((await call.done).outcome, 'ok');
  });

  it('ends a stream that failed in its first batch with an SSE error event, not as a whole answer', async () => {
    const { sink, call } = relay();
    sink().head(200, SSE);
    sink().data(['data: 1\n\n']);
    sink().error(new ServiceError('UPSTREAM_ERROR', 'The provider stopped.'), null);
    const seen = drive(await call.result);
    assert.deepEqual(seen.writes, ['data: 1\n\n']);
    assert.match(seen.ended ?? '', /^event: error\ndata: /);
    assert.equal((await call.done).outcome, 'failed');
  });
});

describe('startRelay when the client leaves', () => {
  it("mid-stream: writes nothing more and ends with the usage of the worker's last message", async () => {
    const { sink, call, aborts } = relay();
    sink().head(200, SSE);
    sink().data(['data: 1\n\n']);
    const seen = drive(await call.result);
    seen.leave();
    seen.leave();
    assert.equal(aborts(), 1);
    let settled = false;
    void call.done.then(() => (settled = true));
    sink().data(['data: 2\n\n']);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false, "the call waits for the worker's last message");
    sink().aborted(USAGE);
    assert.deepEqual(await call.done, { outcome: 'aborted', usage: USAGE, responseId: null });
    assert.deepEqual(seen.writes, ['data: 1\n\n']);
    assert.equal(seen.ended, null);
  });

  it(
    "after the stream's closing event was written: the call is served, with the usage of the worker's last " +
      'message',
    async () => {
      const { sink, call } = relay();
      sink().head(200, SSE);
      sink().data(['data: 1\n\n']);
      // The closing event waits in the backlog until the client's writer comes, and counts once written.
      sink().data(['data: [DONE]\n\n'], true);
      const seen = drive(await call.result);
      assert.deepEqual(seen.writes, ['data: 1\n\n', 'data: [DONE]\n\n']);
      seen.leave();
      sink().aborted(USAGE);
      assert.deepEqual(await call.done, { outcome: 'ok', usage: USAGE, responseId: null });
    },
  );

  it('before the closing event was written: aborted, even when it was on its way', async () => {
    const { sink, call } = relay();
    sink().head(200, SSE);
    const seen = drive(await call.result);
    sink().data(['data: 1\n\n'], false);
    seen.leave();
    sink().data(['data: [DONE]\n\n'], true);
    sink().aborted(USAGE);
    assert.deepEqual(await call.done, { outcome: 'aborted', usage: USAGE, responseId: null });
    assert.deepEqual(seen.writes, ['data: 1\n\n']);
  });

  it('an end that crossed the abort is not written; its usage counts for the aborted call', async () => {
    const { sink, call } = relay();
    sink().head(200, SSE);
    const seen = drive(await call.result);
    seen.leave();
    sink().end({ usage: USAGE, responseId: 'resp_1' }, ['data: [DONE]\n\n']);
    assert.deepEqual(await call.done, { outcome: 'aborted', usage: USAGE, responseId: 'resp_1' });
    assert.equal(seen.ended, null);
  });

  it(
    'before the head: the result is ClientClosed, and an error that crossed the abort still brings its ' + 'usage',
    async () => {
      const { sink, call, clientLeaves } = relay();
      clientLeaves();
      await assert.rejects(call.result, ClientClosed);
      sink().error(new ServiceError('UPSTREAM_ERROR', 'The provider stopped.'), USAGE);
      assert.deepEqual(await call.done, { outcome: 'aborted', usage: USAGE, responseId: null });
    },
  );

  it('before its stream was handed to the client: the end already received gives the usage', async () => {
    const { sink, call, clientLeaves, aborts } = relay(false);
    sink().head(200, SSE);
    await new Promise((resolve) => setImmediate(resolve)); // the head's batch is over: a stream result
    sink().end({ usage: USAGE, responseId: null }, ['data: [DONE]\n\n']);
    assert.ok((await call.result).stream, 'a stream waiting for its writer');
    clientLeaves(); // the server drops the stream without a writer
    assert.equal(aborts(), 1);
    assert.deepEqual(await call.done, { outcome: 'aborted', usage: USAGE, responseId: null });
  });

  it(
    'a pool that says nothing follows an abort (a runtime call not yet started) ends the call at once, without ' +
      'usage',
    async () => {
      const { sink, call } = relay(false);
      sink().head(200, SSE);
      const seen = drive(await call.result);
      seen.leave();
      assert.deepEqual(await call.done, { outcome: 'aborted', usage: null, responseId: null });
    },
  );
});

describe('onOutcome (W4.6 item 5)', () => {
  /** A writer that records, at its end, which outcomes had been told. */
  function writerSeeing(told: string[]): { writer: ResponseWriter; atEnd: string[][] } {
    const atEnd: string[][] = [];
    const writer: ResponseWriter = {
      head() {},
      write: () => true,
      end: () => void atEnd.push([...told]),
      abort: () => void atEnd.push([...told]),
      onWritable() {},
      onAbort() {},
    };
    return { writer, atEnd };
  }

  it('tells the outcome before the last bytes are written: a settlement journaled there survives a kill', async () => {
    const { sink, call } = relay();
    const told: string[] = [];
    call.onOutcome((o) => told.push(o.outcome));
    sink().head(200, SSE);
    await new Promise((resolve) => setImmediate(resolve)); // a stream result, written as it arrives
    const { writer, atEnd } = writerSeeing(told);
    (await call.result).stream!(writer);
    sink().data(['data: 1\n\n']);
    assert.deepEqual(told, []);
    sink().end({ usage: USAGE, responseId: null }, ['data: [DONE]\n\n']);
    assert.deepEqual(atEnd, [['ok']]);
  });

  it('tells a failed stream before its error event, and a listener added after the end at once', async () => {
    const { sink, call } = relay();
    const told: string[] = [];
    call.onOutcome((o) => told.push(o.outcome));
    sink().head(200, SSE);
    await new Promise((resolve) => setImmediate(resolve));
    const { writer, atEnd } = writerSeeing(told);
    (await call.result).stream!(writer);
    sink().error(new ServiceError('UPSTREAM_ERROR', 'The provider stopped.'), USAGE);
    assert.deepEqual(atEnd, [['failed']]);
    // A whole answer: the route writes it once `result` is handled, after a listener added now was told.
    const whole = relay();
    whole.sink().whole(200, { 'content-type': 'application/json' }, '{}', END);
    const late: string[] = [];
    whole.call.onOutcome((o) => late.push(o.outcome));
    assert.deepEqual(late, ['ok']);
  });

  it('a listener that throws is reported, and the answer still ends', async () => {
    const { sink, call } = relay();
    call.onOutcome(() => {
      throw new Error('settle failed');
    });
    sink().head(200, SSE);
    await new Promise((resolve) => setImmediate(resolve));
    const { writer, atEnd } = writerSeeing([]);
    (await call.result).stream!(writer);
    const errors: string[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void errors.push(args.join(' '));
    try {
      sink().end(END, []);
    } finally {
      console.error = original;
    }
    assert.equal(atEnd.length, 1);
    assert.match(errors.join('\n'), /relay onOutcome of req_test failed: settle failed/);
  });
});
