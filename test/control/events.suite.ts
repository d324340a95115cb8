import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseSse } from '../fakes/sse-client.ts';
import { createEventBus, parseEventId, type BusLimits } from '../../control/events.ts';

const small: BusLimits = { ringEvents: 5, ringBytes: 1 << 20, queueEvents: 4, queueBytes: 1 << 20 };
const all = () => true;
const ids = (frames: string[]) =>
  parseSse(frames.join('')).map((e) => (e.event === 'reset' ? 'reset' : (JSON.parse(e.data) as { n: number }).n));

describe('event bus', () => {
  test('IDs increase and start past any earlier run: the start time in microseconds', () => {
    const bus = createEventBus(small, () => 1_000);
    assert.equal(bus.publish('service.state', { n: 1 }).id, 1_000_001);
    assert.equal(bus.publish('service.state', { n: 2 }).id, 1_000_002);
  });

  test('the ring keeps the newest events within its count and byte bounds', () => {
    const bus = createEventBus(small);
    for (let n = 1; n <= 8; n++) bus.publish('service.state', { n });
    assert.equal(bus.ringSize().events, 5);
    const bytes = createEventBus({ ...small, ringEvents: 1000, ringBytes: 300 });
    for (let n = 1; n <= 20; n++) bytes.publish('service.state', { n, pad: 'x'.repeat(40) });
    assert.ok(bytes.ringSize().bytes <= 300 && bytes.ringSize().events >= 2, JSON.stringify(bytes.ringSize()));
  });

  test('Last-Event-ID replays exactly the events after it, then live ones', () => {
    const bus = createEventBus(small);
    const first = bus.publish('service.state', { n: 1 }).id;
    bus.publish('service.state', { n: 2 });
    bus.publish('service.state', { n: 3 });
    const sub = bus.subscribe({ after: first, filter: all });
    bus.publish('service.state', { n: 4 });
    assert.deepEqual(ids(sub.take()), [2, 3, 4]);
  });

  test('an ID older than the ring, or one never issued, gets a reset event before the whole ring', () => {
    const bus = createEventBus(small);
    const first = bus.publish('service.state', { n: 1 }).id;
    for (let n = 2; n <= 7; n++) bus.publish('service.state', { n });
    const old = bus.subscribe({ after: first, filter: all });
    const frames = old.take();
    assert.deepEqual(ids(frames), ['reset', 3, 4, 5, 6, 7]);
    assert.deepEqual(JSON.parse(parseSse(frames[0]!)[0]!.data), {
      lastEventId: String(first),
      oldestEventId: String(first + 2),
    });
    assert.deepEqual(ids(bus.subscribe({ after: bus.lastId() + 10, filter: all }).take()), ['reset', 3, 4, 5, 6, 7]);
    // Up to date: nothing to replay, no reset.
    assert.deepEqual(bus.subscribe({ after: bus.lastId(), filter: all }).take(), []);
  });

  test('without an ID a subscriber gets live events only, unless it asks for the ring', () => {
    const bus = createEventBus(small);
    bus.publish('service.state', { n: 1 });
    assert.deepEqual(bus.subscribe({ after: null, filter: all }).take(), []);
    assert.deepEqual(ids(bus.subscribe({ after: null, replayAll: true, filter: all }).take()), [1]);
  });

  test('filter and until: a job stream ends after its terminal event', () => {
    const bus = createEventBus(small);
    const sub = bus.subscribe({
      after: null,
      filter: (e) => e.jobId === 'a',
      until: (e) => e.type === 'job.succeeded',
    });
    bus.publish('job.progress', { n: 1 }, 'a');
    bus.publish('job.progress', { n: 2 }, 'b');
    bus.publish('job.succeeded', { n: 3 }, 'a');
    bus.publish('job.progress', { n: 4 }, 'a');
    assert.equal(sub.ended(), 'done');
    assert.deepEqual(ids(sub.take()), [1, 3]);
    assert.equal(bus.subscriberCount(), 0);
  });

  test('a subscriber that does not take its events is dropped at its queue bound, not buffered', () => {
    const bus = createEventBus(small);
    const slow = bus.subscribe({ after: null, filter: all });
    const fast = bus.subscribe({ after: null, filter: all });
    for (let n = 1; n <= 6; n++) {
      bus.publish('service.state', { n });
      fast.take();
    }
    assert.equal(slow.ended(), 'dropped');
    assert.equal(fast.ended(), null);
    assert.equal(bus.subscriberCount(), 1);
    // What it had queued before the bound stays readable; nothing after.
    assert.deepEqual(ids(slow.take()), [1, 2, 3, 4]);
  });

  test('onReady wakes a waiting reader; close forgets it; bus close ends everyone', () => {
    const bus = createEventBus(small);
    const sub = bus.subscribe({ after: null, filter: all });
    let woken = 0;
    sub.onReady(() => woken++);
    bus.publish('service.state', { n: 1 });
    assert.equal(woken, 1);
    sub.close();
    assert.equal(bus.subscriberCount(), 0);
    const other = bus.subscribe({ after: null, filter: all });
    bus.close();
    assert.equal(other.ended(), 'closed');
    assert.equal(bus.subscribe({ after: null, filter: all }).ended(), 'closed');
  });

  test('Last-Event-ID parsing: decimal digits only', () => {
    assert.equal(parseEventId(undefined), null);
    assert.equal(parseEventId(''), null);
    assert.equal(parseEventId('1764000000000001'), 1764000000000001);
    for (const bad of ['-1', '1.5', 'abc', '12345678901234567', ' 1', '0x10'])
      assert.equal(parseEventId(bad), undefined, bad);
  });
});

test('a replay longer than the queue bound is delivered whole; the bound counts live events after it', () => {
  const bus = createEventBus({ ...small, ringEvents: 20 });
  const first = bus.publish('service.state', { n: 1 }).id;
  for (let n = 2; n <= 12; n++) bus.publish('service.state', { n });
  const sub = bus.subscribe({ after: first, filter: all });
  for (let n = 13; n <= 16; n++) bus.publish('service.state', { n });
  assert.equal(sub.ended(), null);
  bus.publish('service.state', { n: 17 });
  assert.equal(sub.ended(), 'dropped');
  assert.deepEqual(ids(sub.take()), [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
});
