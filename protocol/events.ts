// The event bus's events and subscriptions as their readers see them (control/events.ts is the bus): the SSE
// frame each event is serialized into once, and what a stream takes from its subscription.

export const EVENT_TYPES = [
  'job.created',
  'job.progress',
  'job.succeeded',
  'job.failed',
  'job.cancelled',
  'model.loaded',
  'model.unloaded',
  'model.evicted',
  'model.load_queued',
  'service.state',
  'gauge.alert',
  'limit.tripped',
  'limit.reset',
  'session.paused',
  'session.resumed',
  'credential.rejected',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface BusEvent {
  id: number;
  type: EventType;
  /** Set on job.* events, so a job's own stream can pick them out. */
  jobId: string | null;
  /** The whole SSE frame: `id`, `event` and `data` lines and the blank line. */
  frame: string;
}

export type EndReason = 'done' | 'dropped' | 'closed';

export interface Subscriber {
  /** The frames waiting, oldest first; taking them empties the queue. */
  take(): string[];
  /** Called once, at the next frame's arrival or the subscription's end (not for what is queued already). */
  onReady(callback: () => void): void;
  /** Set once no more frames will come: the last frame matched `until`, the queue overflowed, or the bus closed. */
  ended(): EndReason | null;
  /** The client left: forget this subscriber now. */
  close(): void;
}

export interface SubscribeOptions {
  /**
   * A `Last-Event-ID`: replay the ring's events after it (after a `reset` event when the ring no longer reaches
   * back to it). Null: replay the whole ring when `replayAll`, else only events published from now on.
   */
  after: number | null;
  replayAll?: boolean;
  filter(event: BusEvent): boolean;
  /** After delivering an event that matches, the subscription ends with `done`. */
  until?(event: BusEvent): boolean;
}

/** An ID as a client sends it back: decimal digits only, as this bus issues them. */
export function parseEventId(raw: string | undefined): number | null | undefined {
  if (raw === undefined || raw === '') return null;
  if (!/^\d{1,16}$/.test(raw)) return undefined;
  return Number(raw);
}

export function sseFrame(type: string, data: unknown, id?: number): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}
