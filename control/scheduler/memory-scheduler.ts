import { ServiceError } from '../../protocol/errors.ts';
import {
  coldAt,
  newUnit,
  pickVictims,
  recordUse,
  residencyOf,
  type ResidencyView,
  type Unit,
  type Warmth,
} from './units.ts';

export type { ResidencyView, UnitState, WarmReason } from './units.ts';

// One memory budget for every local model the service runs (embedded llama.cpp models and llama-server
// instances), issue W4.8. A model that is warm (calls in flight, a session inside its keep-alive, loading,
// pinned) is never evicted to make room: a load that does not fit beside the warm ones waits in a FIFO queue,
// or is refused with a Retry-After, rather than cut a live conversation's model out from under it.
// Room is reserved synchronously inside admit(), so two callers racing for the last bytes cannot both get them.

export type EvictReason = 'memory';

export interface SchedulerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

// Node fires a timer longer than 2^31-1 ms at once; a capped one fires early and the queue just looks again.
const MAX_TIMER_MS = 2 ** 31 - 1;

export const realClock: SchedulerClock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, Math.min(ms, MAX_TIMER_MS));
    t.unref();
    return t;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface SchedulerMetrics {
  loaded?(modelId: string): void;
  evicted?(modelId: string, reason: EvictReason): void;
  /** How long an admit that had to queue waited before it got its room. */
  queueWaitMs?(ms: number): void;
  heldBytes?(bytes: number): void;
}

export interface MemorySchedulerDeps {
  /** Getters, read at each decision: settings change underneath. */
  budgetBytes(): number;
  keepAliveMs(modelId: string): number;
  queueSize(): number;
  waitMs(): number;
  /** Unloads a cold model; the scheduler frees its bytes when this resolves. */
  evict(modelId: string, reason: EvictReason): Promise<void>;
  onEvicted?(modelId: string, reason: EvictReason): void;
  /** position: 1-based, counting the head the queue is working on. */
  onQueued?(modelId: string, position: number): void;
  metrics?: SchedulerMetrics;
  clock?: SchedulerClock;
}

export interface AdmitOptions {
  session?: string | null;
  signal?: AbortSignal;
  /** false: refuse at once when the room is held by warm models (default true: queue). */
  wait?: boolean;
}

export interface Lease {
  readonly modelId: string;
  /** True for the one caller that reserved the room: it loads the model, then says loaded() or failed(). */
  readonly loads: boolean;
  loaded(): void;
  /** The load failed: its bytes are freed and the unit forgotten. */
  failed(): void;
  /**
   * Idempotent. By the loader before loaded(), it counts as failed(): a `finally` after a throwing load frees
   * the room.
   */
  release(): void;
}

export interface MemoryScheduler {
  admit(modelId: string, bytes: number, options?: AdmitOptions): Promise<Lease>;
  /** The unit is gone (its bytes freed) even with leases out; their release is then a no-op. */
  crashed(modelId: string): void;
  removed(modelId: string): void;
  /** The runtime unloaded it on its own (idle expiry). */
  unloaded(modelId: string): void;
  /** Remembered by model ID, across unloads: pinning a model before its first load holds too. */
  pin(modelId: string, pinned: boolean): void;
  /** The budget (or a keep-alive) changed: let the queue look again. */
  recheck(): void;
  residency(): ResidencyView[];
  memory(): { budgetBytes: number; heldBytes: number; queued: number };
}

// Pins are operator intent kept past the unit's life, so they need a bound of their own.
export const MAX_PINS = 256;
// After an evict() that rejected, the same unit is not tried again before this: no retry loop on a stuck unload.
export const EVICT_RETRY_MS = 10_000;
// Busy with nothing on a timer (only in-flight calls hold the room): how soon to suggest a retry.
export const DEFAULT_RETRY_AFTER_SECONDS = 5;

interface Waiter {
  readonly modelId: string;
  readonly bytes: number;
  readonly session: string | null;
  readonly wait: boolean;
  grant(lease: Lease): void;
  fail(err: unknown): void;
}

/** The scheduler's ledger and queue, which the functions below read and move (one per scheduler). */
interface SchedulerState {
  readonly deps: MemorySchedulerDeps;
  readonly clock: SchedulerClock;
  readonly units: Map<string, Unit>;
  readonly pins: Set<string>;
  readonly queue: Waiter[];
  held: number;
  wakeTimer: unknown;
  draining: boolean;
  again: boolean;
}

export function createMemoryScheduler(deps: MemorySchedulerDeps): MemoryScheduler {
  const S: SchedulerState = {
    deps,
    clock: deps.clock ?? realClock,
    units: new Map<string, Unit>(),
    pins: new Set<string>(),
    queue: [],
    held: 0,
    wakeTimer: null,
    draining: false,
    again: false,
  };
  return {
    async admit(modelId, bytes, { session = null, signal, wait = true } = {}) {
      signal?.throwIfAborted();
      if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`bytes must be an integer >= 0: ${bytes}`);
      const unit = S.units.get(modelId);
      // A unit keeps the bytes it was admitted with: a joining call's estimate changes nothing.
      if (unit && unit.state !== 'evicting') return join(S, unit, session);
      const budget = S.deps.budgetBytes();
      if (bytes > budget) throw tooLarge(modelId, bytes, budget);
      if (S.queue.length === 0 && !unit && S.held + bytes <= budget) return reserve(S, modelId, bytes, session);
      // Room by evicting cold units is no wait; room only when warm ones go cold is.
      const room =
        S.queue.length === 0 && pickVictims(S.units.values(), S.held + bytes - budget, (u) => warmth(S, u)) !== null;
      if (!room && (!wait || S.queue.length >= S.deps.queueSize())) throw busy(S, modelId, bytes);
      return enqueue(S, { modelId, bytes, session, wait, signal, queued: !room });
    },
    crashed: (modelId) => drop(S, modelId),
    removed: (modelId) => drop(S, modelId),
    unloaded: (modelId) => drop(S, modelId),
    pin(modelId, pinned) {
      if (!pinned) {
        S.pins.delete(modelId);
        wake(S);
      } else if (!S.pins.has(modelId)) {
        if (S.pins.size >= MAX_PINS) throw new RangeError(`at most ${MAX_PINS} models can be pinned`);
        S.pins.add(modelId);
      }
    },
    recheck: () => wake(S),
    residency: () => [...S.units.values()].map((u) => residencyOf(u, warmth(S, u))),
    memory: () => ({ budgetBytes: S.deps.budgetBytes(), heldBytes: S.held, queued: S.queue.length }),
  };
}

function warmth(S: SchedulerState, unit: Unit): Warmth {
  return { now: S.clock.now(), keepAliveMs: S.deps.keepAliveMs(unit.modelId), pinned: S.pins.has(unit.modelId) };
}

function join(S: SchedulerState, unit: Unit, session: string | null): Lease {
  unit.inFlight++;
  return lease(S, unit, session, false);
}

function reserve(S: SchedulerState, modelId: string, bytes: number, session: string | null): Lease {
  const unit = newUnit(modelId, bytes, S.clock.now());
  S.units.set(modelId, unit);
  setHeld(S, S.held + bytes);
  return lease(S, unit, session, true);
}

function drop(S: SchedulerState, modelId: string): void {
  const unit = S.units.get(modelId);
  if (!unit) return;
  S.units.delete(modelId);
  setHeld(S, S.held - unit.bytes);
  wake(S);
}

function setHeld(S: SchedulerState, bytes: number): void {
  S.held = bytes;
  observe(() => S.deps.metrics?.heldBytes?.(S.held));
}

function lease(S: SchedulerState, unit: Unit, session: string | null, loads: boolean): Lease {
  let released = false;
  let loading = loads;
  // A unit crashed or removed since is not ours: a later reload under the same ID is a new Unit object.
  const ours = () => S.units.get(unit.modelId) === unit;
  const failed = () => {
    if (!loading) return;
    loading = false;
    released = true;
    if (ours()) drop(S, unit.modelId);
  };
  return {
    modelId: unit.modelId,
    loads,
    loaded() {
      if (!loading) return;
      loading = false;
      if (!ours()) return;
      unit.state = 'resident';
      observe(() => S.deps.metrics?.loaded?.(unit.modelId));
      wake(S);
    },
    failed,
    release() {
      if (loading) return failed();
      if (released) return;
      released = true;
      if (!ours()) return;
      unit.inFlight--;
      recordUse(unit, session, S.clock.now());
      wake(S);
    },
  };
}

function enqueue(
  S: SchedulerState,
  o: {
    modelId: string;
    bytes: number;
    session: string | null;
    wait: boolean;
    signal: AbortSignal | undefined;
    queued: boolean;
  },
): Promise<Lease> {
  return new Promise<Lease>((resolve, reject) => {
    const since = S.clock.now();
    const settle = () => {
      S.clock.clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      const at = S.queue.indexOf(waiter);
      if (at >= 0) S.queue.splice(at, 1);
    };
    const waiter: Waiter = {
      modelId: o.modelId,
      bytes: o.bytes,
      session: o.session,
      wait: o.wait,
      grant(lease) {
        settle();
        if (o.queued) observe(() => S.deps.metrics?.queueWaitMs?.(S.clock.now() - since));
        resolve(lease);
      },
      fail(err) {
        settle();
        reject(err);
        // The head leaving can let the next one in.
        wake(S);
      },
    };
    const onAbort = () => waiter.fail(o.signal?.reason);
    const timer = S.clock.setTimeout(() => waiter.fail(busy(S, o.modelId, o.bytes)), S.deps.waitMs());
    o.signal?.addEventListener('abort', onAbort, { once: true });
    S.queue.push(waiter);
    if (o.queued) observe(() => S.deps.onQueued?.(o.modelId, S.queue.length));
    wake(S);
  });
}

// Memory may have freed: serve the queue from its head, then arm the timer for the next keep-alive end.
function wake(S: SchedulerState): void {
  if (S.draining) {
    S.again = true;
    return;
  }
  S.draining = true;
  try {
    do {
      S.again = false;
      drain(S);
    } while (S.again);
  } catch (err) {
    // A throwing getter fails the head it was deciding for, not the timer callback or release() that woke us.
    S.queue[0]?.fail(err);
  } finally {
    S.draining = false;
    arm(S);
  }
}

function drain(S: SchedulerState): void {
  for (let w = S.queue[0]; w; w = S.queue[0]) {
    const unit = S.units.get(w.modelId);
    // Its eviction settling wakes the queue; then it loads afresh.
    if (unit?.state === 'evicting') return;
    if (unit) {
      w.grant(join(S, unit, w.session));
      continue;
    }
    const budget = S.deps.budgetBytes();
    if (w.bytes > budget) {
      w.fail(tooLarge(w.modelId, w.bytes, budget));
      continue;
    }
    if (S.held + w.bytes <= budget) {
      w.grant(reserve(S, w.modelId, w.bytes, w.session));
      continue;
    }
    const victims = pickVictims(S.units.values(), S.held + w.bytes - budget, (u) => warmth(S, u));
    if (victims === null && !w.wait) {
      w.fail(busy(S, w.modelId, w.bytes));
      continue;
    }
    if (victims !== null) for (const v of victims) evict(S, v);
    return;
  }
}

// Decision on a rejected evict(): the unit is kept, bytes and all. We cannot know the memory came free, and
// an undercount would let the next load overcommit; the runtime reports removed()/crashed() if it did go.
function evict(S: SchedulerState, unit: Unit): void {
  unit.state = 'evicting';
  void Promise.resolve()
    .then(() => S.deps.evict(unit.modelId, 'memory'))
    .then(
      () => {
        if (S.units.get(unit.modelId) === unit) {
          S.units.delete(unit.modelId);
          setHeld(S, S.held - unit.bytes);
        }
        observe(() => S.deps.onEvicted?.(unit.modelId, 'memory'));
        observe(() => S.deps.metrics?.evicted?.(unit.modelId, 'memory'));
      },
      () => {
        if (S.units.get(unit.modelId) !== unit) return;
        unit.state = 'resident';
        unit.retryEvictAt = S.clock.now() + EVICT_RETRY_MS;
      },
    )
    .then(() => wake(S));
}

function arm(S: SchedulerState): void {
  if (S.wakeTimer !== null) S.clock.clearTimeout(S.wakeTimer);
  S.wakeTimer = null;
  if (S.queue.length === 0) return;
  const now = S.clock.now();
  let at = Infinity;
  for (const u of S.units.values()) {
    at = Math.min(at, coldAt(u, warmth(S, u)) ?? Infinity);
    if (u.retryEvictAt > now) at = Math.min(at, u.retryEvictAt);
  }
  if (at === Infinity) return;
  S.wakeTimer = S.clock.setTimeout(() => {
    S.wakeTimer = null;
    wake(S);
  }, at - now);
}

function busy(S: SchedulerState, modelId: string, bytes: number): ServiceError {
  const now = S.clock.now();
  let soonest = Infinity;
  for (const u of S.units.values()) soonest = Math.min(soonest, coldAt(u, warmth(S, u)) ?? Infinity);
  const seconds = soonest === Infinity ? DEFAULT_RETRY_AFTER_SECONDS : Math.max(1, Math.ceil((soonest - now) / 1000));
  return new ServiceError(
    'MODEL_MEMORY_BUSY',
    `Local models in use hold the memory budget; \`${modelId.slice(0, 200)}\` cannot load now. ` +
      `Retry in ${seconds} s.`,
    {
      headers: { 'retry-after': String(seconds) },
      details: {
        modelId: modelId.slice(0, 300),
        neededBytes: bytes,
        budgetBytes: S.deps.budgetBytes(),
        heldBytes: S.held,
        retryAfterSeconds: seconds,
      },
    },
  );
}

function tooLarge(modelId: string, bytes: number, budget: number): ServiceError {
  return new ServiceError(
    'MODEL_TOO_LARGE',
    `Model \`${modelId.slice(0, 200)}\` needs ${bytes} bytes, more than the local-model memory budget of ${budget}.`,
    { param: 'model', details: { modelId: modelId.slice(0, 300), neededBytes: bytes, budgetBytes: budget } },
  );
}

// An observer's throw must not leave the ledger half-updated.
function observe(call: () => void): void {
  try {
    call();
  } catch {}
}
