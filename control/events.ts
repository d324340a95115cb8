// The service's one event bus, read as server-sent events by GET /v1/events and GET /v1/jobs/{id}/events.
// Every event is serialized once, when published, into its SSE frame; subscribers share those strings. Memory
// is bounded twice: the replay ring (for `Last-Event-ID` resume) by count and bytes, and each subscriber's
// queue by count and bytes. A subscriber that falls behind its queue's bound is dropped, never buffered for.

export {
  EVENT_TYPES,
  parseEventId,
  sseFrame,
  type BusEvent,
  type EndReason,
  type EventType,
  type SubscribeOptions,
  type Subscriber,
} from '../protocol/events.ts';
import {
  sseFrame,
  type BusEvent,
  type EndReason,
  type EventType,
  type SubscribeOptions,
  type Subscriber,
} from '../protocol/events.ts';
import type { EventsPort } from '../protocol/ports/jobs.ts';

export interface BusLimits {
  ringEvents: number;
  ringBytes: number;
  queueEvents: number;
  queueBytes: number;
}

export const DEFAULT_BUS_LIMITS: BusLimits = {
  ringEvents: 1000,
  ringBytes: 1 << 20,
  queueEvents: 256,
  queueBytes: 256 << 10,
};

/** One subscriber's bounded queue of frames; it leaves `subscribers` when it ends. */
class Sub implements Subscriber {
  queue: string[] = [];
  bytes = 0;
  /** The replay's frames are the ring's own strings: they do not count against the queue's bound. */
  replaying = false;
  replayed = 0;
  end: EndReason | null = null;
  ready: (() => void) | null = null;
  constructor(
    readonly options: SubscribeOptions,
    private readonly limits: BusLimits,
    private readonly subscribers: Set<Sub>,
  ) {}

  push(frame: string): void {
    if (this.end !== null) return;
    if (
      !this.replaying &&
      (this.queue.length - this.replayed >= this.limits.queueEvents ||
        this.bytes + frame.length > this.limits.queueBytes)
    ) {
      this.finish('dropped');
      return;
    }
    this.queue.push(frame);
    if (this.replaying) this.replayed++;
    else this.bytes += frame.length;
    this.wake();
  }
  deliver(event: BusEvent): void {
    if (this.end !== null || !this.options.filter(event)) return;
    this.push(event.frame);
    if (this.end === null && this.options.until?.(event)) this.finish('done');
  }
  finish(reason: EndReason): void {
    if (this.end !== null) return;
    this.end = reason;
    this.subscribers.delete(this);
    this.wake();
  }
  wake(): void {
    const ready = this.ready;
    this.ready = null;
    ready?.();
  }
  take(): string[] {
    const frames = this.queue;
    this.queue = [];
    this.bytes = 0;
    this.replayed = 0;
    return frames;
  }
  onReady(callback: () => void): void {
    this.ready = callback;
  }
  ended(): EndReason | null {
    return this.end;
  }
  close(): void {
    this.end ??= 'closed';
    this.subscribers.delete(this);
    this.ready = null;
    this.queue = [];
  }
}

export function createEventBus(limits: BusLimits = DEFAULT_BUS_LIMITS, now: () => number = Date.now) {
  // IDs start at the start time in microseconds, so an ID from an earlier run of the service is always older
  // than this run's ring (a `reset`), never mistaken for one of this run's events.
  let lastId = now() * 1000;
  const ring: BusEvent[] = [];
  let ringBytes = 0;
  const subscribers = new Set<Sub>();
  let closed = false;

  return {
    publish(type: EventType, data: unknown, jobId: string | null = null): BusEvent {
      const id = ++lastId;
      const event: BusEvent = { id, type, jobId, frame: sseFrame(type, data, id) };
      ring.push(event);
      ringBytes += event.frame.length;
      while (ring.length > limits.ringEvents || (ringBytes > limits.ringBytes && ring.length > 1))
        ringBytes -= ring.shift()!.frame.length;
      for (const s of [...subscribers]) s.deliver(event);
      return event;
    },

    /** The replay comes first, in the same queue, so live events can never overtake it. */
    subscribe(options: SubscribeOptions): Subscriber {
      const sub = new Sub(options, limits, subscribers);
      if (closed) {
        sub.end = 'closed';
        return sub;
      }
      subscribers.add(sub);
      let after = options.after;
      if (after !== null) {
        const oldest = ring[0]?.id ?? lastId + 1;
        // Events between `after` and the ring's oldest are gone (or the ID was never issued by this run).
        if (after < oldest - 1 || after > lastId) {
          sub.push(sseFrame('reset', { lastEventId: String(after), oldestEventId: ring[0] ? String(oldest) : null }));
          after = -1;
        }
      }
      if (after === null && options.replayAll !== true) return sub;
      sub.replaying = true;
      for (const event of ring) {
        if (after !== null && event.id <= after) continue;
        sub.deliver(event);
      }
      sub.replaying = false;
      return sub;
    },

    /** Whether `id` is still in the ring (a finished job's stream replays its terminal event from there). */
    holds(id: number): boolean {
      return ring.length > 0 && id >= ring[0]!.id && id <= ring[ring.length - 1]!.id;
    },
    lastId: () => lastId,
    subscriberCount: () => subscribers.size,
    ringSize: () => ({ events: ring.length, bytes: ringBytes }),
    /** Shutdown: every stream ends, so the drain does not wait on them. */
    close(): void {
      closed = true;
      for (const s of [...subscribers]) s.finish('closed');
    },
  };
}

export type EventBus = ReturnType<typeof createEventBus>;

const JOB_ENDS: ReadonlySet<EventType> = new Set(['job.succeeded', 'job.failed', 'job.cancelled']);

/** The bus as the edge reaches it: a subscription described as data becomes the bus's filter and end. */
export function eventsPort(bus: EventBus): EventsPort {
  return {
    lastId: () => bus.lastId(),
    holds: (id) => bus.holds(id),
    subscribe({ after, replayAll, types, jobId }) {
      const only = types === undefined || types === null ? null : new Set(types);
      const wanted = (e: BusEvent) => (jobId === undefined || e.jobId === jobId) && (only === null || only.has(e.type));
      return bus.subscribe({
        after,
        ...(replayAll !== undefined && { replayAll }),
        filter: wanted,
        ...(jobId !== undefined && { until: (e: BusEvent) => wanted(e) && JOB_ENDS.has(e.type) }),
      });
    },
  };
}
