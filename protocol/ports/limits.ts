import type { Actor } from '../actor.ts';
import type {
  LimitCreate,
  LimitRecord,
  LimitUpdate,
  LimitView,
  LoopBrake,
  LoopBrakeUpdate,
  PausedSession,
} from '../http/limits.ts';
import { methodsOf } from './methods.ts';

// Enforced limits as the edge reaches them: the management calls of the routes, and what admission reads on the
// hot path: the enabled limits (a snapshot the control plane replaces on each change) and the shared ledger.

/** One counter of the shared ledger (state/limit-ledger.ts builds the table). */
export interface CounterState {
  windowStart: number;
  used: bigint;
  reserved: bigint;
}

export interface Ledger {
  /** The slot of `limitId|scopeKey`, claiming a free one; -1 when its probe run is full. */
  slotOf(limitId: string, scopeKey: string): number;
  /** The slot of `limitId|scopeKey` if some thread has claimed it, else -1; claims nothing. */
  peek(limitId: string, scopeKey: string): number;
  /** Moves the slot's window on to `windowStart` if it is later (a mark of when a key was last seen). */
  mark(slot: number, windowStart: number): void;
  /**
   * Reserves `need` in the slot's window that starts at `windowStart` (rolling the slot into it when it still
   * counts an older one); false, with nothing reserved, when used plus reserved would pass `max`.
   */
  reserve(slot: number, windowStart: number, need: bigint, max: bigint): boolean;
  /** Gives back a reservation and counts what the call used, if the slot still counts the reservation's window. */
  settle(slot: number, windowStart: number, reserved: bigint, used: bigint): void;
  read(slot: number): CounterState;
  /** `limitId|scopeKey` of a slot this thread has found (slotOf or peek), else undefined. */
  nameOf(slot: number): string | undefined;
  /** Sets a slot's window and settled use (a restart's persisted counters), before any call reserves. */
  load(slot: number, windowStart: number, used: bigint): void;
}

/** An enabled limit as admission reads it: the bound in the ledger's unit (nano-dollars for `usd`). */
export interface ActiveLimit {
  record: LimitRecord;
  max: bigint;
}

/** The enabled limits and whether the loop brake is on, as the edge threads follow them. */
export interface AdmissionState {
  limits: readonly ActiveLimit[];
  /** The loop brake is on or a session is paused (BrakeSource.active). */
  brake: boolean;
}

export interface LimitsPort {
  list(): LimitView[] | Promise<LimitView[]>;
  get(id: string): LimitView | Promise<LimitView>;
  create(input: LimitCreate, actor: Actor, requestId: string): Promise<LimitView>;
  update(id: string, patch: LimitUpdate, actor: Actor, requestId: string): Promise<LimitView>;
  remove(id: string, actor: Actor, requestId: string): Promise<void>;
  brake: LoopBrakePort;
}

/** The loop brake's settings and paused sessions, as the routes reach them. */
export interface LoopBrakePort {
  config(): LoopBrake | Promise<LoopBrake>;
  update(patch: LoopBrakeUpdate, actor: Actor, requestId: string): Promise<LoopBrake>;
  paused(): PausedSession[] | Promise<PausedSession[]>;
  resume(session: string, actor: Actor, requestId: string): Promise<PausedSession>;
}

/** The loop brake as admission asks it, per call of a session. */
export interface BrakeSource {
  /** False while the brake is off and no session is paused: admission then asks nothing. */
  active(): boolean;
  isPaused(session: string): PausedSession | null;
  /** True when this call repeats its last tool call once too often: the session is paused from now on. */
  observe(session: string, signature: string, tool: string): boolean;
}

export interface AdmissionSource {
  /** The enabled limits; the same array until a limit changes. */
  active(): readonly ActiveLimit[];
  ledger: Ledger;
  brake?: BrakeSource;
  now(): number;
  /** The freshest reading of a Gauge account's window: percent used and when it resets; null when none. */
  gaugeShare(accountId: string, windowId: string): { percent: number; resetsAt: number | null } | null;
  /**
   * A call's reservation in this slot settled to `used` in the window starting at `windowStart`: the control plane
   * adds it to the journal's batch (store/limit-journal.ts), written by `journal` or before this turn ends.
   */
  settled?(slot: number, windowStart: number, used: bigint): void;
  /**
   * Around a call's settlements on an edge thread (state/limit-gate.ts): the control thread's snapshot of the
   * ledger waits for them, and they for it.
   */
  enter?(): void;
  exit?(): void;
  /**
   * Writes the settlements batched so far now: a call's settle calls it before the answer's last bytes go out, so
   * that a kill -9 after the client has its answer loses none.
   */
  journal?(): void;
  /** A call was refused by this limit's counter (published once per counter and window). */
  tripped(limit: LimitRecord, key: string, windowStart: number, resetsAt: number): void;
}

export const LIMITS_METHODS = methodsOf<Omit<LimitsPort, 'brake'>>()(['list', 'get', 'create', 'update', 'remove']);
export const LOOP_BRAKE_METHODS = methodsOf<LoopBrakePort>()(['config', 'update', 'paused', 'resume']);
