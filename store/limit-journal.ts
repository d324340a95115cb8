import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

// The limit counters' settlements, written as they happen so that a kill -9 loses none of them (W3.6 item 5).
// LMDB holds a snapshot of the counters, written about once a second; this journal holds every settlement since.
// Each settlement is one line, `windowStart used limitId|scopeKey`, added to the turn's batch, and the batch is
// written with one write(2) before the turn ends (a microtask): a settlement the process made is in the page
// cache, which a killed process does not take with it. (A machine that loses power can lose what the kernel had
// not flushed; LMDB's own snapshot is synced as the store is.)
//
// Files are numbered generations in `<dir>`. `rotate()` closes the current one and opens the next, at the moment
// the control plane reads the ledger for a snapshot: that snapshot covers every generation up to the one
// returned, the store records so in the same commit, and `drop()` deletes them once it is committed. At start,
// `replayable(covered)` gives back the settlements of every later generation.

export interface Settlement {
  limitId: string;
  scopeKey: string;
  windowStart: number;
  used: bigint;
}

export interface LimitJournal {
  /** Adds a settlement to this turn's batch (written before the turn ends). */
  append(limitId: string, scopeKey: string, windowStart: number, used: bigint): void;
  /** Writes the batch, closes this generation and opens the next; returns the generation closed. */
  rotate(): number;
  /** Deletes the files of every generation up to `generation`: a committed snapshot covers them. */
  drop(generation: number): void;
  close(): void;
}

const FILE = /^(\d{1,15})\.journal$/;
const LINE = /^(\d{1,16}) (\d{1,30}) (lim_[0-9A-Za-z]{1,40})\|([\x21-\x7e]{1,160})$/;

const generations = (dir: string): number[] =>
  readdirSync(dir)
    .map((name) => FILE.exec(name))
    .filter((m) => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);

/** The settlements of every generation after `covered`, in the order written; torn or odd lines are skipped. */
export function replayable(dir: string, covered: number): Settlement[] {
  mkdirSync(dir, { recursive: true });
  const out: Settlement[] = [];
  for (const generation of generations(dir)) {
    if (generation <= covered) continue;
    const lines = readFileSync(join(dir, `${generation}.journal`), 'latin1').split('\n');
    // Every write ends in a newline: what follows the last one is empty, or a line a kill cut short.
    lines.pop();
    for (const line of lines) {
      const m = LINE.exec(line);
      if (m !== null) out.push({ windowStart: Number(m[1]), used: BigInt(m[2]!), limitId: m[3]!, scopeKey: m[4]! });
    }
  }
  return out;
}

/** Opens a new generation in `dir`, after every one already there and after `covered`. */
export function openLimitJournal(dir: string, covered: number, onError: (err: unknown) => void): LimitJournal {
  mkdirSync(dir, { recursive: true });
  let generation = Math.max(covered, ...generations(dir)) + 1;
  let fd: number | null = openSync(join(dir, `${generation}.journal`), 'a');
  let batch = '';
  let failed = false;

  function write(): void {
    const text = batch;
    batch = '';
    if (text === '' || fd === null) return;
    try {
      writeSync(fd, text);
    } catch (err) {
      // A full disk: the snapshot a second later still counts these, only a kill -9 before it would lose them.
      if (!failed) onError(err);
      failed = true;
    }
  }

  return {
    append(limitId, scopeKey, windowStart, used) {
      if (batch === '') queueMicrotask(write);
      batch += `${windowStart} ${used} ${limitId}|${scopeKey}\n`;
    },
    rotate() {
      write();
      const closed = generation;
      if (fd !== null) closeSync(fd);
      generation++;
      fd = openSync(join(dir, `${generation}.journal`), 'a');
      return closed;
    },
    drop(upTo) {
      for (const g of generations(dir)) if (g <= upTo) rmSync(join(dir, `${g}.journal`), { force: true });
    },
    close() {
      write();
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}
