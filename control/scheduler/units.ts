// The memory scheduler's ledger rows and the arithmetic over them: which units are warm and why, when one goes
// cold, which cold ones to evict. Pure: time, keep-alive and pins come in as arguments, nothing here holds state
// of its own, so memory-scheduler.ts keeps the queue and the timers and this file stays testable by reading.

export type UnitState = 'loading' | 'resident' | 'evicting';
export type WarmReason = 'in_flight' | 'session' | 'pinned' | 'loading';

// A unit answers many sessions over its life; only the latest ones can still keep it warm.
export const MAX_SESSIONS = 64;

export interface Unit {
  readonly modelId: string;
  readonly bytes: number;
  state: UnitState;
  inFlight: number;
  /** Session ID -> its last use, least recent first (re-inserted on use). */
  readonly sessions: Map<string, number>;
  /** The last release by anyone, session or not: "coldest" ranks by this. */
  lastUseAt: number;
  lastSessionUseAt: number | null;
  /** Set after an evict() that failed: the unit is not offered as a victim again before this. */
  retryEvictAt: number;
}

/** What a decision about one unit needs from outside the ledger, read at decision time. */
export interface Warmth {
  now: number;
  /** -1 (any negative): a session keeps the unit warm for ever; 0: cold as soon as idle. */
  keepAliveMs: number;
  pinned: boolean;
}

export interface ResidencyView {
  modelId: string;
  state: UnitState;
  bytes: number;
  inFlight: number;
  pinned: boolean;
  warm: WarmReason[];
  /** Most recent first. */
  sessions: { session: string; lastUseAt: number }[];
  lastUseAt: number;
  /** When only a session's keep-alive keeps it warm: when that ends. Otherwise null (cold, or warm for now). */
  coldAt: number | null;
}

export function newUnit(modelId: string, bytes: number, now: number): Unit {
  return {
    modelId,
    bytes,
    state: 'loading',
    inFlight: 1,
    sessions: new Map(),
    lastUseAt: now,
    lastSessionUseAt: null,
    retryEvictAt: 0,
  };
}

export function recordUse(unit: Unit, session: string | null, now: number): void {
  unit.lastUseAt = now;
  if (session === null) return;
  unit.sessions.delete(session);
  unit.sessions.set(session, now);
  unit.lastSessionUseAt = now;
  if (unit.sessions.size > MAX_SESSIONS) unit.sessions.delete(unit.sessions.keys().next().value as string);
}

function sessionWarmUntil(unit: Unit, w: Warmth): number {
  if (unit.lastSessionUseAt === null) return -Infinity;
  return w.keepAliveMs < 0 ? Infinity : unit.lastSessionUseAt + w.keepAliveMs;
}

export function warmReasons(unit: Unit, w: Warmth): WarmReason[] {
  if (unit.state === 'evicting') return [];
  const reasons: WarmReason[] = [];
  if (unit.inFlight > 0) reasons.push('in_flight');
  if (sessionWarmUntil(unit, w) > w.now) reasons.push('session');
  if (w.pinned) reasons.push('pinned');
  if (unit.state === 'loading') reasons.push('loading');
  return reasons;
}

export function coldAt(unit: Unit, w: Warmth): number | null {
  const reasons = warmReasons(unit, w);
  if (reasons.length !== 1 || reasons[0] !== 'session') return null;
  const until = sessionWarmUntil(unit, w);
  return Number.isFinite(until) ? until : null;
}

/**
 * The cold units to evict, coldest first, so that `need` more bytes come free; bytes already being evicted
 * count as coming free. [] when those cover it; null when even every cold unit would not: then nothing is
 * evicted, since a partial eviction would unload models without letting anyone in.
 */
export function pickVictims(units: Iterable<Unit>, need: number, warmth: (u: Unit) => Warmth): Unit[] | null {
  let freed = 0;
  const cold: Unit[] = [];
  for (const u of units) {
    if (u.state === 'evicting') freed += u.bytes;
    if (u.state !== 'resident') continue;
    const w = warmth(u);
    if (u.retryEvictAt <= w.now && warmReasons(u, w).length === 0) cold.push(u);
  }
  cold.sort((a, b) => a.lastUseAt - b.lastUseAt);
  const victims: Unit[] = [];
  for (const u of cold) {
    if (freed >= need) break;
    victims.push(u);
    freed += u.bytes;
  }
  return freed >= need ? victims : null;
}

export function residencyOf(unit: Unit, w: Warmth): ResidencyView {
  return {
    modelId: unit.modelId,
    state: unit.state,
    bytes: unit.bytes,
    inFlight: unit.inFlight,
    pinned: w.pinned,
    warm: warmReasons(unit, w),
    sessions: [...unit.sessions].reverse().map(([session, lastUseAt]) => ({ session, lastUseAt })),
    lastUseAt: unit.lastUseAt,
    coldAt: coldAt(unit, w),
  };
}
