import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { LimitGate } from '../state/limit-gate.ts';

// The limit counters' settlements, written as they happen so that a kill -9 loses none of them (W3.6 item 5).
// LMDB holds a snapshot of the counters, written about once a second; this journal holds every settlement since.
// A settlement is added to the turn's batch, and the batch is written with one write(2) before the turn ends (a
// microtask): a settlement the process made is in the page cache, which a killed process does not take with it.
// (A machine that loses power can lose what the kernel had not flushed; LMDB's own snapshot is synced as the
// store is.)
//
// Records are binary, in 32-bit words of the platform's byte order, written through typed arrays so that a
// settlement costs no allocation (as text it cost ~1 us a call, bench/admission.ts):
//   KEY         1, slot, length, 0, then that many bytes of `limitId|scopeKey` (latin1) padded to 8: once per
//               slot per file, before its first settlement there
//   SETTLEMENT  2, slot, window start (f64, ms), use in the limit's unit (i64)
// A record a kill cut short ends the file's replay.
//
// Files are numbered generations in `<dir>`. `rotate()` closes the current one and opens the next, at the moment
// the control plane reads the ledger for a snapshot: that snapshot covers every generation up to the one
// returned, the store records so in the same commit, and `drop()` deletes them once it is committed. At start,
// `replayable(covered)` gives back the settlements of every later generation.
//
// A generation's file name is its decimal number as the writer formats it, at most GENERATION_DIGITS digits, so
// that every generation is a safe integer read back exactly and every file written is one replay reads. A
// generation grows by one at each snapshot (about once a second of traffic): the bound is reached only from a corrupt
// store or directory. Past it the journal opens no file and says so once: settlements are then kept by the
// snapshots alone (a kill -9 may lose the last second), never written where no replay would find them.

export interface Settlement {
  limitId: string;
  scopeKey: string;
  windowStart: number;
  used: bigint;
}

export interface LimitJournal {
  /** Adds a settlement of the ledger's `slot` to this turn's batch (written before the turn ends). */
  append(slot: number, windowStart: number, used: bigint): void;
  /** Writes the batch now (one write(2)); a later append starts the next. */
  flush(): void;
  /**
   * Writes the batch, closes this generation and opens the next; returns the generation closed. `read` (the
   * snapshot's read of the ledger) runs at the moment of the turn, with no settlement of another thread under way;
   * when it answers false nothing turns, and this answers null.
   */
  rotate(read?: () => boolean): number | null;
  /** Deletes the files of every generation up to `generation`: a committed snapshot covers them. */
  drop(generation: number): void;
  close(): void;
}

const KEY = 1;
const SETTLEMENT = 2;
const SETTLEMENT_BYTES = 24;
/** Digits of a generation's file name; 15 keeps every generation under Number.MAX_SAFE_INTEGER. */
const GENERATION_DIGITS = 15;
export const GENERATION_MAX = 10 ** GENERATION_DIGITS - 1;
/** Exactly the names the writer makes: no sign, no leading zero (`007.journal` would be read as `7.journal`). */
const FILE = new RegExp(`^([1-9]\\d{0,${GENERATION_DIGITS - 1}})\\.journal$`);
const fileOf = (dir: string, generation: number) => join(dir, `${generation}.journal`);
const NAME = /^(lim_[0-9A-Za-z]{1,40})\|([\x21-\x7e]{1,160})$/;
const pad8 = (n: number) => (n + 7) & ~7;

const generations = (dir: string): number[] =>
  readdirSync(dir)
    .map((name) => FILE.exec(name))
    .filter((m) => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);

/** Typed views of one buffer whose start is 8-aligned. */
class Words {
  readonly bytes: Buffer;
  readonly u32: Uint32Array;
  readonly f64: Float64Array;
  readonly i64: BigInt64Array;
  constructor(size: number) {
    const buffer = new ArrayBuffer(pad8(size));
    this.bytes = Buffer.from(buffer);
    this.u32 = new Uint32Array(buffer);
    this.f64 = new Float64Array(buffer);
    this.i64 = new BigInt64Array(buffer);
  }
}

/** The settlements of one file, in the order written, up to the first record that is cut short or unknown. */
function settlementsOf(file: Buffer, out: Settlement[]): void {
  const w = new Words(file.length);
  file.copy(w.bytes);
  const names = new Map<number, RegExpExecArray | null>();
  let at = 0;
  while (at + 16 <= file.length) {
    const type = w.u32[at / 4];
    const slot = w.u32[at / 4 + 1]!;
    if (type === KEY) {
      const length = w.u32[at / 4 + 2]!;
      if (at + 16 + length > file.length) return;
      names.set(slot, NAME.exec(w.bytes.toString('latin1', at + 16, at + 16 + length)));
      at += 16 + pad8(length);
    } else if (type === SETTLEMENT && at + SETTLEMENT_BYTES <= file.length) {
      const name = names.get(slot);
      const windowStart = w.f64[at / 8 + 1]!;
      const used = w.i64[at / 8 + 2]!;
      if (name && Number.isSafeInteger(windowStart) && used >= 0n)
        out.push({ limitId: name[1]!, scopeKey: name[2]!, windowStart, used });
      at += SETTLEMENT_BYTES;
    } else return;
  }
}

/** The settlements of every generation after `covered`, in the order written; cut short or odd records end a file. */
export function replayable(dir: string, covered: number): Settlement[] {
  mkdirSync(dir, { recursive: true });
  const out: Settlement[] = [];
  for (const generation of generations(dir)) {
    if (generation > covered) settlementsOf(readFileSync(fileOf(dir, generation)), out);
  }
  return out;
}

/**
 * Opens a new generation in `dir`, after every one already there and after `covered`. `nameOf` gives a slot's
 * `limitId|scopeKey` (the ledger's claim), written once per file before the slot's first settlement in it. With
 * `gate` (several threads settle), the generation is shared: edge threads write into it (followLimitJournal),
 * and `rotate` moves it on only while no settlement is under way (state/limit-gate.ts).
 */
export function openLimitJournal(
  dir: string,
  covered: number,
  nameOf: (slot: number) => string | undefined,
  onError: (err: unknown) => void,
  gate?: LimitGate,
): LimitJournal {
  mkdirSync(dir, { recursive: true });
  const last = Math.max(covered, ...generations(dir));
  const first = Number.isSafeInteger(last) ? last + 1 : GENERATION_MAX + 1;
  gate?.begin(first);
  const w = createWriter(dir, first, nameOf, onError);
  return {
    append: w.append,
    flush: w.write,
    rotate(read = () => true) {
      w.write();
      // Past the bound no file is open: a snapshot then covers every file there is.
      const closed = Math.min(w.generation(), GENERATION_MAX);
      if (!(gate === undefined ? read() : gate.turn(read, closed + 1))) return null;
      w.moveTo(closed + 1);
      return closed;
    },
    drop(upTo) {
      for (const g of generations(dir)) if (g <= upTo) rmSync(fileOf(dir, g), { force: true });
    },
    close: w.close,
  };
}

/** An edge thread's writer of the shared journal: each settlement goes into the generation the gate holds now. */
export function followLimitJournal(
  dir: string,
  gate: LimitGate,
  nameOf: (slot: number) => string | undefined,
  onError: (err: unknown) => void,
): Pick<LimitJournal, 'append' | 'flush' | 'close'> {
  const w = createWriter(dir, gate.generation(), nameOf, onError);
  return {
    append(slot, windowStart, used) {
      const generation = gate.generation();
      if (generation !== w.generation()) w.moveTo(generation);
      w.append(slot, windowStart, used);
    },
    flush: w.write,
    close: w.close,
  };
}

/** One thread's batch of settlements and the file of its generation. */
function createWriter(
  dir: string,
  first: number,
  nameOf: (slot: number) => string | undefined,
  onError: (err: unknown) => void,
) {
  let generation = first;
  let bounded = false;
  /** The file of the current generation; none past the bound (reported once). */
  const openCurrent = (): number | null => {
    if (generation <= GENERATION_MAX) return openSync(fileOf(dir, generation), 'a');
    if (!bounded)
      onError(new Error(`the limit journal is past its last generation (${GENERATION_MAX}); snapshots only`));
    bounded = true;
    return null;
  };
  let fd = openCurrent();
  /** The slots whose name this file holds. */
  let named = new Set<number>();
  let batch = new Words(64 * 1024);
  /** Bytes of the batch filled, always a multiple of 8. */
  let length = 0;
  let failed = false;

  function room(bytes: number): void {
    if (length + bytes <= batch.bytes.length) return;
    const bigger = new Words(Math.max(batch.bytes.length * 2, length + bytes));
    batch.bytes.copy(bigger.bytes, 0, 0, length);
    batch = bigger;
  }

  function write(): void {
    const bytes = length;
    length = 0;
    if (bytes === 0 || fd === null) return;
    try {
      writeSync(fd, batch.bytes, 0, bytes);
    } catch (err) {
      // A full disk: the snapshot a second later still counts these, only a kill -9 before it would lose them.
      if (!failed) onError(err);
      failed = true;
    }
  }

  return {
    generation: () => generation,
    append(slot: number, windowStart: number, used: bigint): void {
      if (length === 0) queueMicrotask(write);
      if (!named.has(slot)) {
        const name = nameOf(slot);
        if (name === undefined) return;
        named.add(slot);
        room(16 + pad8(name.length));
        const at = length / 4;
        batch.u32[at] = KEY;
        batch.u32[at + 1] = slot;
        batch.u32[at + 2] = name.length;
        batch.u32[at + 3] = 0;
        length += 16 + pad8(batch.bytes.write(name, length + 16, 'latin1'));
      }
      room(SETTLEMENT_BYTES);
      const at = length / 8;
      batch.u32[at * 2] = SETTLEMENT;
      batch.u32[at * 2 + 1] = slot;
      batch.f64[at + 1] = windowStart;
      batch.i64[at + 2] = used;
      length += SETTLEMENT_BYTES;
    },
    write,
    /** Writes the batch into the file it was made for, then opens `next`'s. */
    moveTo(next: number): void {
      write();
      if (fd !== null) closeSync(fd);
      generation = Math.min(next, GENERATION_MAX + 1);
      fd = openCurrent();
      named = new Set();
    },
    close(): void {
      write();
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}
