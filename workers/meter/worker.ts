import { workerData } from 'node:worker_threads';
import { expose } from 'comlink';
import {
  METER_COMMITTED,
  METER_OVERSIZED,
  METER_PROCESSED,
  RECORD_SLOTS,
  unpackRecord,
  type MeterApi,
  type MeterBatch,
  type MeterWorkerData,
} from '../../protocol/meter.ts';
import { openStoreEnv } from '../../store/env.ts';
import { usageWriter } from '../../store/usage-repo.ts';
import { createPending, dayCache, foldRecord, pendingRows } from './aggregate.ts';

// The meter actor: the single writer of usage aggregates. Records are folded into in-memory deltas and
// committed together, at most `commitMs` after the first uncommitted one, so a burst of calls costs a few
// transactions rather than one each. The same LMDB environment is open on the edge's thread too; lmdb-js
// shares one environment per path across a process's threads, and the edge only reads these tables.

const data = workerData as MeterWorkerData;
const env = openStoreEnv(data.dataDir);
const writer = usageWriter(env);
const counters = new Int32Array(data.counters);
const dayOf = dayCache();

// A high-cardinality burst (many tokens or tools) commits early instead of growing without bound.
const MAX_PENDING_ROWS = 20_000;

let pending = createPending();
let processed = 0;
let uncommitted = 0;
let timer: NodeJS.Timeout | null = null;
let oldestUncommitted = 0;
let waiters: { upTo: number; resolve: () => void }[] = [];

function commit(): void {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  if (uncommitted === 0) return;
  const batch = pending;
  pending = createPending();
  const n = uncommitted;
  uncommitted = 0;
  // A failed commit throws out of the worker: the edge sees it exit, reports what was lost, restarts it.
  writer.commit(batch);
  Atomics.add(counters, METER_COMMITTED, n);
  if (batch.oversized > 0) Atomics.add(counters, METER_OVERSIZED, batch.oversized);
}

data.records.on('message', (batch: MeterBatch) => {
  const { fields } = batch;
  const n = fields.length / RECORD_SLOTS;
  for (let at = 0; at < fields.length; at += RECORD_SLOTS) {
    const rec = unpackRecord(fields, at);
    foldRecord(pending, rec, dayOf(rec.at));
  }
  processed += n;
  if (uncommitted === 0) oldestUncommitted = Date.now();
  uncommitted += n;
  Atomics.store(counters, METER_PROCESSED, processed | 0);
  // Under a steady stream, messages can keep the timer phase waiting; the age check commits regardless.
  if (pendingRows(pending) >= MAX_PENDING_ROWS || Date.now() - oldestUncommitted >= data.commitMs) commit();
  else if (timer === null) timer = setTimeout(commit, data.commitMs);
  if (waiters.length > 0) {
    const ready = waiters.filter((w) => w.upTo <= processed);
    waiters = waiters.filter((w) => w.upTo > processed);
    for (const w of ready) w.resolve();
  }
});

/** Control calls travel on another port than records, so wait for the records sent before the call. */
function arrived(upTo: number): Promise<void> {
  if (upTo <= processed) return Promise.resolve();
  return new Promise((resolve) => waiters.push({ upTo, resolve }));
}

const api: MeterApi = {
  async flush(upTo) {
    await arrived(upTo);
    commit();
    await env.root.flushed;
  },
  async prune(beforeDay) {
    return writer.prune(beforeDay);
  },
  async close(upTo) {
    await api.flush(upTo);
    data.records.close();
    await env.close();
  },
};

expose(api, data.control);
