// The live state of provider keys (W4.2, edge/gateway/key-pool.ts), in shared memory so that every edge thread
// chooses from the same figures: one SharedArrayBuffer holding two open-addressed tables.
//
// Keys (one slot per credential ID, never freed while the process runs; a workstation has far fewer):
//   KEY       a 63-bit hash of the credential ID, claimed with one compareExchange (as limit-ledger.ts does)
//   INFLIGHT  calls running on it now (Atomics.add / sub)
//   VALUES    requests remaining, limit, reset (ms); tokens remaining, limit, reset; cooling until (ms); set aside
//             at (ms, a 401/403). NaN where unknown. Float64 cells are advisory: a torn read between two threads
//             misjudges one choice, never a count.
// Sessions (a 63-bit hash of `providerId|session`, the key slot it keeps, its last call in ms): a session found
// idle past the pool's idle time is free; an insert whose probe run is full takes the run's longest idle entry
// (least recently used first), so the table stays bounded however many sessions come and go.

import { FNV_SEEDS, fnv1a } from '../protocol/fnv.ts';
import type { HeadroomWindow } from '../protocol/ratelimit-headers.ts';

export const DEFAULT_KEY_SLOTS = 1024;
export const DEFAULT_SESSION_SLOTS = 16_384;
const VALUES = 8;
const REQ_REMAINING = 0;
const REQ_LIMIT = 1;
const REQ_RESET = 2;
const TOK_REMAINING = 3;
const TOK_LIMIT = 4;
const TOK_RESET = 5;
const COOL_UNTIL = 6;
const REJECTED_AT = 7;
const MAX_PROBES = 16;

export interface KeyState {
  requests: HeadroomWindow;
  tokens: HeadroomWindow;
  coolingUntil: number | null;
  rejectedAt: number | null;
  inflight: number;
}

export interface KeyPoolTable {
  /** The slot of `credentialId`, claiming a free one; -1 when the table is full. */
  slotOf(credentialId: string): number;
  observe(slot: number, requests: HeadroomWindow | null, tokens: HeadroomWindow | null): void;
  cool(slot: number, until: number): void;
  reject(slot: number, at: number): void;
  read(slot: number): KeyState;
  /** The share of the key's tightest window left (0..1), 1 where nothing is known or its window has reset. */
  share(slot: number, now: number): number;
  coolingUntil(slot: number): number;
  rejectedAt(slot: number): number;
  inflight(slot: number): number;
  began(slot: number): void;
  ended(slot: number): void;
  /** The key slot `session` keeps, or -1 when it keeps none (or has been idle `idleMs`). */
  sessionKey(session: bigint, now: number, idleMs: number): number;
  /** Records that `session` keeps `keySlot`, as of `now`. */
  keepSession(session: bigint, keySlot: number, now: number, idleMs: number): void;
  /** How many live sessions keep `keySlot` (a scan: for views, never per call). */
  sessionsOf(keySlot: number, now: number, idleMs: number): number;
}

export function createKeyPoolBuffer(keys = DEFAULT_KEY_SLOTS, sessions = DEFAULT_SESSION_SLOTS): SharedArrayBuffer {
  return new SharedArrayBuffer(keys * (8 + 8 + VALUES * 8) + sessions * (8 + 8 + 8) + 16);
}

/** A session's key in the table: 63 bits of `providerId|session`, never 0. */
export function sessionHash(providerId: string, session: string): bigint {
  const name = `${providerId}|${session}`;
  return (BigInt(fnv1a(name, FNV_SEEDS[0]) & 0x7fffffff) << 32n) | BigInt(fnv1a(name, FNV_SEEDS[1])) | 1n;
}

/** One typed view after another over the buffer, each 8-aligned. */
function views(buffer: SharedArrayBuffer) {
  let offset = 0;
  const take = <T>(make: (at: number) => T, bytes: number): T => {
    const view = make(offset);
    offset += bytes;
    return view;
  };
  return {
    big: (n: number) => take((at) => new BigInt64Array(buffer, at, n), 8 * n),
    float: (n: number) => take((at) => new Float64Array(buffer, at, n), 8 * n),
    // Int32 cells, one per 8 bytes, so that the views after stay 8-aligned.
    int: (n: number) => take((at) => new Int32Array(buffer, at, n * 2), 8 * n),
  };
}

const known = (x: number) => (Number.isNaN(x) ? null : x);

/** The share of one window left: 1 where nothing is known or the window has reset. */
function windowShare(remaining: number, limit: number, reset: number, now: number): number {
  if (Number.isNaN(remaining)) return 1;
  if (!Number.isNaN(reset) && reset <= now) return 1;
  if (remaining <= 0) return 0;
  return Number.isNaN(limit) || limit <= 0 ? 1 : Math.min(1, remaining / limit);
}

type KeyCells = Omit<KeyPoolTable, 'sessionKey' | 'keepSession' | 'sessionsOf'>;
type SessionCells = Pick<KeyPoolTable, 'sessionKey' | 'keepSession' | 'sessionsOf'>;

function keyCells(take: ReturnType<typeof views>, slots: number): KeyCells {
  const ids = take.big(slots);
  const values = take.float(slots * VALUES);
  const inflights = take.int(slots);
  const memo = new Map<string, number>();
  const v = (slot: number, field: number) => slot * VALUES + field;
  const f = (slot: number, field: number) => values[v(slot, field)]!;

  function slotOf(credentialId: string): number {
    const cached = memo.get(credentialId);
    if (cached !== undefined) return cached;
    const high = fnv1a(credentialId, FNV_SEEDS[0]);
    const id = (BigInt(high & 0x7fffffff) << 32n) | BigInt(fnv1a(credentialId, FNV_SEEDS[1])) | 1n;
    for (let probe = 0; probe < MAX_PROBES * 4; probe++) {
      const slot = (high + probe) % slots;
      let held = Atomics.load(ids, slot);
      if (held === 0n) {
        held = Atomics.compareExchange(ids, slot, 0n, id);
        if (held === 0n) {
          // A new slot: nothing known yet (a zeroed cell would read as "0 remaining").
          for (let field = 0; field < VALUES; field++) values[v(slot, field)] = Number.NaN;
          held = id;
        }
      }
      if (held === id) {
        memo.set(credentialId, slot);
        return slot;
      }
    }
    return -1;
  }

  const put = (slot: number, field: number, x: number | null) => {
    if (x !== null) values[v(slot, field)] = x;
  };
  return {
    slotOf,
    observe(slot, requests, tokens) {
      if (requests !== null) {
        put(slot, REQ_REMAINING, requests.remaining);
        put(slot, REQ_LIMIT, requests.limit);
        put(slot, REQ_RESET, requests.resetsAt);
      }
      if (tokens !== null) {
        put(slot, TOK_REMAINING, tokens.remaining);
        put(slot, TOK_LIMIT, tokens.limit);
        put(slot, TOK_RESET, tokens.resetsAt);
      }
    },
    cool(slot, until) {
      const current = f(slot, COOL_UNTIL);
      if (Number.isNaN(current) || until > current) values[v(slot, COOL_UNTIL)] = until;
    },
    reject: (slot, at) => void (values[v(slot, REJECTED_AT)] = at),
    read(slot) {
      const x = (field: number) => known(f(slot, field));
      return {
        requests: { remaining: x(REQ_REMAINING), limit: x(REQ_LIMIT), resetsAt: x(REQ_RESET) },
        tokens: { remaining: x(TOK_REMAINING), limit: x(TOK_LIMIT), resetsAt: x(TOK_RESET) },
        coolingUntil: x(COOL_UNTIL),
        rejectedAt: x(REJECTED_AT),
        inflight: Atomics.load(inflights, slot * 2),
      };
    },
    share: (slot, now) =>
      Math.min(
        windowShare(f(slot, REQ_REMAINING), f(slot, REQ_LIMIT), f(slot, REQ_RESET), now),
        windowShare(f(slot, TOK_REMAINING), f(slot, TOK_LIMIT), f(slot, TOK_RESET), now),
      ),
    coolingUntil: (slot) => f(slot, COOL_UNTIL),
    rejectedAt: (slot) => f(slot, REJECTED_AT),
    inflight: (slot) => Atomics.load(inflights, slot * 2),
    began: (slot) => void Atomics.add(inflights, slot * 2, 1),
    ended: (slot) => void Atomics.sub(inflights, slot * 2, 1),
  };
}

function sessionCells(take: ReturnType<typeof views>, slots: number): SessionCells {
  const ids = take.big(slots);
  const lastAt = take.float(slots);
  const keys = take.int(slots);
  const home = (session: bigint) => Number(session & 0x7fffffffn) % slots;
  const live = (i: number, now: number, idleMs: number) => Atomics.load(ids, i) !== 0n && now - lastAt[i]! < idleMs;
  const write = (i: number, session: bigint, keySlot: number, now: number) => {
    Atomics.store(ids, i, session);
    Atomics.store(keys, i * 2, keySlot + 1);
    lastAt[i] = now;
  };
  return {
    sessionKey(session, now, idleMs) {
      const start = home(session);
      for (let probe = 0; probe < MAX_PROBES; probe++) {
        const i = (start + probe) % slots;
        if (Atomics.load(ids, i) !== session) continue;
        return live(i, now, idleMs) ? Atomics.load(keys, i * 2) - 1 : -1;
      }
      return -1;
    },
    keepSession(session, keySlot, now, idleMs) {
      const start = home(session);
      let free = -1;
      let lru = start;
      for (let probe = 0; probe < MAX_PROBES; probe++) {
        const i = (start + probe) % slots;
        if (Atomics.load(ids, i) === session) return write(i, session, keySlot, now);
        if (!live(i, now, idleMs)) {
          if (free === -1) free = i;
        } else if (lastAt[i]! < lastAt[lru]!) lru = i;
      }
      // A free or idle entry, else the least recently used live one. Two threads racing for one entry: one of
      // the two sessions chooses a key again at its next call.
      write(free === -1 ? lru : free, session, keySlot, now);
    },
    sessionsOf(keySlot, now, idleMs) {
      let n = 0;
      for (let i = 0; i < slots; i++) if (live(i, now, idleMs) && Atomics.load(keys, i * 2) === keySlot + 1) n++;
      return n;
    },
  };
}

export function createKeyPoolTable(
  buffer: SharedArrayBuffer,
  keySlots = DEFAULT_KEY_SLOTS,
  sessionSlots = DEFAULT_SESSION_SLOTS,
): KeyPoolTable {
  const take = views(buffer);
  return { ...keyCells(take, keySlots), ...sessionCells(take, sessionSlots) };
}
