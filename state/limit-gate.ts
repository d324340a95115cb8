// What keeps the limit journal's files and the counters' snapshot in step when several threads settle into the
// shared ledger (state/limit-ledger.ts, store/limit-journal.ts). Four cells of shared memory:
//
//   GENERATION  the journal generation every thread writes its settlements into now.
//   LOCK        1 while the control thread reads the ledger for a snapshot.
//   SETTLING    the settlements under way on the edge threads (between `enter` and `exit`).
//   CLAIMS      the ledger slots claimed by any thread; the control thread hears each claim's name a moment
//               later, and a snapshot waits until it has heard them all.
//
// A settlement on an edge thread enters, reads the generation, settles in the ledger, adds the record to that
// generation's batch, and exits. The control thread's snapshot locks, waits for the settlements under way, reads
// the ledger, moves the generation on, and unlocks: every settlement of the generation it closes is in what it
// read, and none of a later one is. The snapshot then covers the closed generation, whose files go once it is
// stored. An edge thread waits (Atomics.wait) while the lock is held: a read of the claimed slots, well under a
// millisecond, once a second.

const GENERATION = 0;
const LOCK = 2;
const SETTLING = 3;
const CLAIMS = 4;

export function createLimitGateBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(24);
}

export interface LimitGate {
  generation(): number;
  /** Before any thread settles: the generation the journal opened. */
  begin(generation: number): void;
  /** An edge thread's settlement starts (waits while a snapshot reads). */
  enter(): void;
  exit(): void;
  /**
   * The control thread's snapshot: `read` runs with no settlement under way on any thread, then the generation
   * moves on to `next`, unless `read` answers false (it cannot snapshot yet). Only the control thread calls it
   * (it must not block, so it spins, briefly). Answers whether the generation moved.
   */
  turn(read: () => boolean, next: number): boolean;
  /** A thread claimed a ledger slot. */
  claimed(): void;
  claims(): number;
}

export function createLimitGate(buffer: SharedArrayBuffer): LimitGate {
  const generation = new BigInt64Array(buffer, 0, 1);
  const cells = new Int32Array(buffer);
  return {
    generation: () => Number(Atomics.load(generation, GENERATION)),
    begin(n) {
      Atomics.store(generation, GENERATION, BigInt(n));
    },
    enter() {
      for (;;) {
        if (Atomics.load(cells, LOCK) === 1) Atomics.wait(cells, LOCK, 1, 50);
        Atomics.add(cells, SETTLING, 1);
        if (Atomics.load(cells, LOCK) === 0) return;
        Atomics.sub(cells, SETTLING, 1);
      }
    },
    exit() {
      Atomics.sub(cells, SETTLING, 1);
    },
    turn(read, next) {
      Atomics.store(cells, LOCK, 1);
      try {
        while (Atomics.load(cells, SETTLING) !== 0);
        if (!read()) return false;
        Atomics.store(generation, GENERATION, BigInt(next));
        return true;
      } finally {
        Atomics.store(cells, LOCK, 0);
        Atomics.notify(cells, LOCK);
      }
    },
    claimed() {
      Atomics.add(cells, CLAIMS, 1);
    },
    claims: () => Atomics.load(cells, CLAIMS),
  };
}
