import type { MessagePort } from 'node:worker_threads';
import type { UsageEvent } from './gateway.ts';

// Messages between the edge and the meter actor. Control calls (flush, prune, close) go through comlink on
// the worker's own port; usage events take a separate, plain port in batches, because a comlink call per
// event (an id, a promise and a reply each) would cost the hot path more than the event is worth.

/** What crosses to the meter for one call: the event minus its request ID and anything else. */
export type MeterRecord = Omit<UsageEvent, 'kind' | 'requestId'>;

export interface MeterBatch {
  kind: 'usage.batch';
  records: MeterRecord[];
}

/** Slots of the shared counter array the worker advances, so the edge can see its backlog without messages. */
export const METER_PROCESSED = 0;
export const METER_COMMITTED = 1;
/** Rows refused because their key would exceed LMDB's key size. */
export const METER_OVERSIZED = 2;
export const METER_COUNTER_SLOTS = 3;

export interface MeterWorkerData {
  dataDir: string;
  /** Receives MeterBatch messages. */
  records: MessagePort;
  /** The comlink end serving MeterApi. */
  control: MessagePort;
  /** Int32 slots above; record counts wrap at 2^32, so readers compare differences. */
  counters: SharedArrayBuffer;
  /** Longest time folded records wait in memory before they are committed. */
  commitMs: number;
}

/** The actor's control surface, exposed with comlink. */
export interface MeterApi {
  /** Commits everything folded once the first `upTo` records have arrived, and waits until it is on disk. */
  flush(upTo: number): Promise<void>;
  /** Deletes aggregates of days before `beforeDay`; resolves with the number of rows removed. */
  prune(beforeDay: string): Promise<number>;
  /** Commits, flushes and closes the store; the worker may then be terminated. */
  close(upTo: number): Promise<void>;
}
