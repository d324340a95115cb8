import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createEventBus } from '../../../control/events.ts';
import { streamEvents } from '../../../edge/http/event-stream.ts';
import type { ResponseWriter } from '../../../edge/http/types.ts';
import { parseSse } from '../../fakes/sse-client.ts';

/** A writer whose socket is full while `full` is set; records what it was given. */
function fakeWriter() {
  const w = {
    status: 0,
    headers: {} as Record<string, string>,
    chunks: [] as string[],
    full: false,
    ended: false,
    aborted: false,
    writable: null as (() => void) | null,
    abortCb: null as (() => void) | null,
    onChunk: null as ((c: string) => void) | null,
  };
  const out: ResponseWriter = {
    head(status, headers) {
      w.status = status;
      w.headers = headers;
    },
    write(chunk) {
      w.chunks.push(String(chunk));
      w.onChunk?.(String(chunk));
      return !w.full;
    },
    end(chunk) {
      if (chunk !== undefined) w.chunks.push(String(chunk));
      w.ended = true;
    },
    abort: () => void (w.aborted = true),
    onWritable: (cb) => void (w.writable = cb),
    onAbort: (cb) => void (w.abortCb = cb),
  };
  return { w, out, events: () => parseSse(w.chunks.join('')).filter((e) => e.event !== null) };
}

const limits = { ringEvents: 100, ringBytes: 1 << 20, queueEvents: 3, queueBytes: 1 << 20 };

describe('SSE writer', () => {
  test('writes the head, events as they come, and ends after a job stream is done', () => {
    const bus = createEventBus(limits);
    const { w, out, events } = fakeWriter();
    streamEvents(out, bus.subscribe({ after: null, filter: () => true, until: (e) => e.type === 'job.succeeded' }));
    assert.equal(w.status, 200);
    assert.match(w.headers['content-type']!, /^text\/event-stream/);
    bus.publish('job.progress', { p: 1 }, 'j');
    bus.publish('job.succeeded', { p: 2 }, 'j');
    assert.deepEqual(
      events().map((e) => e.event),
      ['job.progress', 'job.succeeded'],
    );
    assert.equal(w.ended, true);
    assert.equal(bus.subscriberCount(), 0);
  });

  test('stops writing while the socket is full and resumes on writable, in order', () => {
    const bus = createEventBus(limits);
    const { w, out, events } = fakeWriter();
    streamEvents(out, bus.subscribe({ after: null, filter: () => true }));
    w.full = true;
    bus.publish('service.state', { n: 1 });
    const written = w.chunks.length;
    bus.publish('service.state', { n: 2 });
    bus.publish('service.state', { n: 3 });
    assert.equal(w.chunks.length, written);
    w.full = false;
    w.writable!();
    assert.deepEqual(
      events().map((e) => JSON.parse(e.data).n),
      [1, 2, 3],
    );
    assert.equal(w.ended, false);
  });

  test('a client that stays behind past the queue bound is cut off and forgotten', () => {
    const bus = createEventBus(limits);
    const { w, out } = fakeWriter();
    streamEvents(out, bus.subscribe({ after: null, filter: () => true }));
    w.full = true;
    for (let n = 1; n <= 5; n++) bus.publish('service.state', { n });
    assert.equal(w.aborted, true);
    assert.equal(bus.subscriberCount(), 0);
  });

  test('a client that leaves unsubscribes at once', () => {
    const bus = createEventBus(limits);
    const { w, out } = fakeWriter();
    streamEvents(out, bus.subscribe({ after: null, filter: () => true }));
    assert.equal(bus.subscriberCount(), 1);
    w.abortCb!();
    assert.equal(bus.subscriberCount(), 0);
  });

  test('an idle stream gets keep-alive comments; the bus closing ends it', async () => {
    const bus = createEventBus(limits);
    const { w, out } = fakeWriter();
    const keepAlive = new Promise<void>((resolve) => (w.onChunk = (c) => c === ': keep-alive\n\n' && resolve()));
    streamEvents(out, bus.subscribe({ after: null, filter: () => true }), 5);
    // The keep-alive timer is unref'd (it must not hold the service open); a ref'd guard keeps this test's
    // event loop alive until the comment arrives, else the runner sees a promise the loop can never settle.
    const guard = setTimeout(() => {}, 10_000);
    await keepAlive.finally(() => clearTimeout(guard));
    bus.close();
    assert.equal(w.ended, true);
  });
});
