// The counters of enforced limits, in shared memory so that every edge thread admits against the same figures
// (W3.2 runs several): a SharedArrayBuffer table of slots, each four 64-bit integers updated with Atomics.
//
//   KEY       a 63-bit hash of `limitId|scopeKey`; 0 while the slot is free. A thread claims a free slot with one
//             compareExchange, so two threads that meet the same new key agree on its slot.
//   WINDOW    the start (ms) of the window `USED` counts.
//   USED      settled use in that window, in the limit's unit (requests, tokens, or nano-dollars).
//   RESERVED  the worst cases of the calls admitted and not yet settled.
//
// A reservation adds first and checks after, and a settlement adds the use before it gives back the reservation:
// two threads racing for the last room may both be refused, never both admitted past the bound. A slot is never
// freed while the process runs (a thread may hold its index); the table holds far more keys than limits times
// sessions on one workstation, and a key that finds no slot is counted under its limit's overflow key instead.
// The control plane reads the slots it heard claimed (`onClaim`) to persist them and to answer GET /v1/limits.

import { FNV_SEEDS, fnv1a } from '../protocol/fnv.ts';
import type { Ledger } from '../protocol/ports/limits.ts';

const FIELDS = 4;
const KEY = 0;
const WINDOW = 1;
const USED = 2;
const RESERVED = 3;
/** Slots probed from a key's home before the table counts as full for it. */
const MAX_PROBES = 64;
/** Keys a thread remembers the slot of; beyond it the memo starts again (the table is the truth). */
const MEMO_MAX = 100_000;

export const DEFAULT_LEDGER_SLOTS = 65_536;

export function createLedgerBuffer(slots = DEFAULT_LEDGER_SLOTS): SharedArrayBuffer {
  return new SharedArrayBuffer(slots * FIELDS * 8);
}

export function createLedger(
  buffer: SharedArrayBuffer,
  onClaim: (slot: number, limitId: string, scopeKey: string) => void = () => undefined,
): Ledger {
  const cells = new BigInt64Array(buffer);
  const slots = cells.length / FIELDS;
  /** limitId -> scopeKey -> slot: two lookups, where one `limitId|scopeKey` string would be built per call. */
  const memo = new Map<string, Map<string, number>>();
  let memoSize = 0;
  /** The name of every slot this thread found, for its journal's records (at most one per slot). */
  const names = new Map<number, string>();
  const at = (slot: number, field: number) => slot * FIELDS + field;
  // The window starts as BigInts, converted once per window rather than per call (every call shares a few).
  let lastStart = Number.NaN;
  let lastStartBig = 0n;
  const big = (n: number) => (n === lastStart ? lastStartBig : ((lastStart = n), (lastStartBig = BigInt(n))));

  function roll(slot: number, windowStart: number): void {
    const current = Atomics.load(cells, at(slot, WINDOW));
    const start = big(windowStart);
    if (current >= start) return;
    // One thread wins the roll and clears the old window's use; reservations in flight stay reserved.
    if (Atomics.compareExchange(cells, at(slot, WINDOW), current, start) === current)
      Atomics.store(cells, at(slot, USED), 0n);
  }

  function find(limitId: string, scopeKey: string, claim: boolean): number {
    const known = memo.get(limitId)?.get(scopeKey);
    if (known !== undefined) return known;
    const name = `${limitId}|${scopeKey}`;
    const high = fnv1a(name, FNV_SEEDS[0]);
    const key = (BigInt(high & 0x7fffffff) << 32n) | BigInt(fnv1a(name, FNV_SEEDS[1])) | 1n;
    for (let probe = 0; probe < MAX_PROBES; probe++) {
      const slot = (high + probe) % slots;
      const i = at(slot, KEY);
      let held = Atomics.load(cells, i);
      if (held === 0n) {
        if (!claim) return -1;
        held = Atomics.compareExchange(cells, i, 0n, key);
        if (held === 0n) onClaim(slot, limitId, scopeKey);
      }
      if (held === 0n || held === key) {
        if (memoSize++ >= MEMO_MAX) {
          memo.clear();
          memoSize = 1;
        }
        let keys = memo.get(limitId);
        if (keys === undefined) memo.set(limitId, (keys = new Map()));
        keys.set(scopeKey, slot);
        if (!names.has(slot)) names.set(slot, name);
        return slot;
      }
    }
    return -1;
  }

  return {
    slotOf: (limitId, scopeKey) => find(limitId, scopeKey, true),
    peek: (limitId, scopeKey) => find(limitId, scopeKey, false),
    mark: roll,
    nameOf: (slot) => names.get(slot),
    reserve(slot, windowStart, need, max) {
      roll(slot, windowStart);
      const reserved = Atomics.add(cells, at(slot, RESERVED), need) + need;
      if (Atomics.load(cells, at(slot, USED)) + reserved <= max) return true;
      Atomics.sub(cells, at(slot, RESERVED), need);
      return false;
    },
    settle(slot, windowStart, reserved, used) {
      // Use first, reservation after: a reserve that reads between the two then counts the call twice (and may
      // refuse), never zero times (and admit past the bound).
      if (Atomics.load(cells, at(slot, WINDOW)) === big(windowStart)) Atomics.add(cells, at(slot, USED), used);
      Atomics.sub(cells, at(slot, RESERVED), reserved);
    },
    read(slot) {
      return {
        windowStart: Number(Atomics.load(cells, at(slot, WINDOW))),
        used: Atomics.load(cells, at(slot, USED)),
        reserved: Atomics.load(cells, at(slot, RESERVED)),
      };
    },
    load(slot, windowStart, used) {
      Atomics.store(cells, at(slot, WINDOW), BigInt(windowStart));
      Atomics.store(cells, at(slot, USED), used);
    },
  };
}
