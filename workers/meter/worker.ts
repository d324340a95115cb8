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
import { journalFileName, journalName, journalPath, removeJournal } from '../../store/usage-journal.ts';
import { usageWriter } from '../../store/usage-repo.ts';
import { statSync } from 'node:fs';
import { createPending, dayCache, foldRecord, pendingRows } from './aggregate.ts';

// The meter actor: the single writer of usage aggregates. Records are folded into in-memory deltas and
// committed together, at most `commitMs` after the first uncommitted one, so a burst of calls costs a few
// transactions rather than one each. The same LMDB environment is open on the edge's thread too; lmdb-js
// shares one environment per path across a process's threads, and the edge only reads these tables. Each
// commit also stores the usage journal's marks of the records it folded (store/usage-journal.ts); once a
// writer's next file has a mark, its earlier ones hold nothing uncommitted and are removed.

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
// The marks of the records folded since the last commit, and the files whose marks the next commit drops.
let marks = new Map<string, number>();
let forget = new Set<string>();
// Per run and writer, the highest journal file seen in a mark: the files before it are removed.
const newest = new Map<string, number>();

/** After a commit: the files before each newly marked one are wholly committed. */
function retireBefore(committed: ReadonlyMap<string, number>): void {
  for (const file of committed.keys()) {
    const parts = journalName(file);
    if (parts === null) continue;
    const writer = `${parts.run}-${parts.writer}`;
    const seen = newest.get(writer) ?? 0;
    if (parts.seq <= seen) continue;
    newest.set(writer, parts.seq);
    for (let seq = seen === 0 ? 1 : seen; seq < parts.seq; seq++) {
      const name = journalFileName(parts.run, parts.writer, seq);
      try {
        removeJournal(data.dataDir, name);
      } catch {
        continue; // Kept: the next start finds it wholly committed and removes it then.
      }
      forget.add(name);
    }
  }
}

function commit(): void {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  if (uncommitted === 0) return;
  const batch = pending;
  pending = createPending();
  const n = uncommitted;
  uncommitted = 0;
  const committed = marks;
  const dropped = forget;
  marks = new Map();
  forget = new Set();
  // A failed commit throws out of the worker: the edge sees it exit, reports what was lost, restarts it.
  writer.commit(batch, committed, dropped);
  Atomics.add(counters, METER_COMMITTED, n);
  retireBefore(committed);
  if (batch.oversized > 0) Atomics.add(counters, METER_OVERSIZED, batch.oversized);
}

data.records.on('message', (batch: MeterBatch) => {
  const { fields } = batch;
  if (batch.marks !== undefined)
    for (let i = 0; i + 1 < batch.marks.length; i += 2)
      marks.set(batch.marks[i] as string, batch.marks[i + 1] as number);
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
    // This run's files that hold nothing uncommitted go now; any other waits for the next start's replay.
    const done: string[] = [];
    for (const [file, end] of writer.marks()) {
      if (journalName(file)?.run !== data.run) continue;
      try {
        if (statSync(journalPath(data.dataDir, file)).size === end) done.push(file);
      } catch {
        done.push(file);
      }
    }
    await api.retire(done);
    await env.close();
  },
  async marks() {
    return [...writer.marks()];
  },
  async retire(files) {
    if (files.length === 0) return;
    for (const file of files) removeJournal(data.dataDir, file);
    writer.commit(createPending(), undefined, files);
    await env.root.flushed;
  },
};

expose(api, data.control);
