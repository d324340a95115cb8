import type { Logger } from 'pino';
import type { LimitCounterView, LimitRecord } from '../protocol/http/limits.ts';
import { createLedger, createLedgerBuffer } from '../state/limit-ledger.ts';
import { createLimitGate, createLimitGateBuffer, type LimitGate } from '../state/limit-gate.ts';
import type { Ledger } from '../protocol/ports/limits.ts';
import { type CalendarWindow, underWayAt, windowEndOf, windowStartOf } from '../protocol/limit-windows.ts';
import type { StoreEnv } from '../store/env.ts';
import { type LimitJournal, openLimitJournal, replayable } from '../store/limit-journal.ts';
import type { LimitRepo } from '../store/limit-repo.ts';
import type { EventBus } from './events.ts';

// The limits' counters (control/limits.ts): the shared ledger, loaded at start from the stored snapshot and then
// the journal, persisted about once a second while the service runs, the tripped counters whose window ends are
// announced, and the counters a limit's view shows.

export interface LimitCountersDeps {
  env: StoreEnv;
  repo: LimitRepo;
  bus: EventBus;
  log: Logger;
  now: () => number;
  /** The limit records by ID, kept current by control/limits.ts. */
  records: ReadonlyMap<string, LimitRecord>;
  persistEveryMs?: number;
  journalDir?: string;
  gaugeShare(accountId: string, windowId: string): { percent: number; resetsAt: number | null } | null;
}

export interface LimitCounters {
  ledger: Ledger;
  /** The ledger's memory and its gate's, for the edge threads that admit and settle beside this one. */
  shared: { ledger: SharedArrayBuffer; gate: SharedArrayBuffer };
  /** An edge thread claimed `slot` for `limitId|scopeKey` (its report, a moment after the claim). */
  heardClaim(slot: number, limitId: string, scopeKey: string): void;
  journal: LimitJournal | null;
  /** A limit's counters, the largest first, as its view shows them. */
  counters(record: LimitRecord): LimitCounterView[];
  /** A counter refused in its window: announced once, and its reset announced by the sweep. */
  tripped(record: LimitRecord, key: string, windowStart: number, resetsAt: number): void;
  close(): Promise<void>;
}

const NANO = 1_000_000_000n;
const COUNTERS_SHOWN = 50;

/** Every slot claimed, by any thread, with its key. */
type Claimed = Map<number, { limitId: string; scopeKey: string }>;

/** A ledger figure in the limit's unit. */
const shown = (r: LimitRecord, n: bigint): number => (r.metric === 'usd' ? Number(n) / Number(NANO) : Number(n));

export function openLimitCounters(deps: LimitCountersDeps): LimitCounters {
  const { env, repo, log, now, records } = deps;
  /** Every slot claimed, by any thread, with its key: what is persisted and shown. */
  const claimed: Claimed = new Map();
  const shared = { ledger: createLedgerBuffer(), gate: createLimitGateBuffer() };
  const gate = createLimitGate(shared.gate);
  const ledger: Ledger = createLedger(shared.ledger, (slot, limitId, scopeKey) => {
    claimed.set(slot, { limitId, scopeKey });
    gate.claimed();
  });
  /** What each slot last persisted as, `windowStart:used`. */
  const persisted = new Map<number, string>();
  /** Counters refused in their current window: `limitId|key` -> when that window ends. */
  const tripped = new Map<string, { record: LimitRecord; key: string; resetsAt: number }>();

  const { journal, over } = loadCounters(deps, ledger, claimed, persisted, gate);
  /** Sweeps in a row that found a claim whose name has not come yet. */
  let unheard = 0;

  let writing: Promise<void> = Promise.resolve();
  // What the journal replayed is stored at once, and its files go.
  void persist(journal !== null || over.length > 0);
  // A sweep: window resets to announce, the counters to store.
  const timer = setInterval(() => void persist(), deps.persistEveryMs ?? 1000);
  timer.unref();

  return {
    ledger,
    shared,
    heardClaim: (slot, limitId, scopeKey) => void claimed.set(slot, { limitId, scopeKey }),
    journal,
    counters: (record) => countersOf(record, claimed, ledger, now, deps.gaugeShare),
    tripped(record, key, windowStart, resetsAt) {
      const name = `${record.id}|${key}`;
      if (tripped.has(name) && tripped.get(name)!.resetsAt === resetsAt) return;
      tripped.set(name, { record, key, resetsAt });
      deps.bus.publish('limit.tripped', {
        limitId: record.id,
        name: record.name,
        key: key === '*' ? null : key,
        window: record.window,
        metric: record.metric,
        windowStart: new Date(windowStart).toISOString(),
        resetsAt: new Date(resetsAt).toISOString(),
      });
    },
    async close() {
      clearInterval(timer);
      await persist();
      journal?.close();
    },
  };

  /**
   * Writes the counters of every claimed slot that changed since it was last written, with the journal generation
   * this snapshot includes (the journal turns over at the same moment), then deletes the journal files it covers.
   * About once a second: a commit per settling turn cost the edge ~13 us and LMDB's write thread ~16 us a request
   * under load (bench/RESULTS.md, W3.6); the journal keeps every settlement in between.
   */
  function persist(force = false): Promise<void> {
    resetTripped();
    if (!env.isOpen()) return writing;
    let changed: Change[] = [];
    // Read at the turn, with no settlement of another thread under way; nothing turns when nothing changed.
    // A slot an edge thread claimed a moment ago, whose name is on its way, has settlements in the journal only:
    // no generation may be dropped until the snapshot holds it. (Should a thread die before telling, after ten
    // sweeps the snapshot goes on without it, and says so.)
    const read = () => {
      if (claimed.size < gate.claims() && ++unheard < 10) return false;
      if (unheard >= 10)
        log.warn({ slots: gate.claims() - claimed.size }, 'limit counters persisted without some claimed slots');
      unheard = 0;
      changed = changesOf(claimed, records, ledger, persisted);
      return changed.length > 0 || force;
    };
    let generation: number | null = null;
    if (journal === null ? !read() : (generation = journal.rotate(read)) === null) return writing;
    for (const c of changed) persisted.set(c.slot, `${c.windowStart}:${c.used}`);
    writing = writing
      .then(() =>
        env.commit(() => {
          for (const c of changed) {
            if (records.has(c.limitId))
              repo.stageCounter(c.limitId, c.scopeKey, { windowStart: c.windowStart, used: c.used });
          }
          if (generation !== null) repo.stageJournalCovered(generation);
          for (const o of over.splice(0)) repo.stageForgetCounter(o.limitId, o.scopeKey);
        }),
      )
      .then(() => {
        if (generation !== null) journal?.drop(generation);
      })
      .catch((err: unknown) => {
        // Written again by the next sweep: nothing says these are stored (and their journal files stay).
        for (const c of changed) persisted.delete(c.slot);
        log.warn({ err: String(err).slice(0, 300) }, 'could not persist limit counters');
      });
    return writing;
  }

  function resetTripped(): void {
    const t = now();
    for (const [name, trip] of tripped) {
      if (t < trip.resetsAt) continue;
      tripped.delete(name);
      deps.bus.publish('limit.reset', { limitId: trip.record.id, name: trip.record.name, key: trip.key });
    }
  }
}

interface Change {
  slot: number;
  limitId: string;
  scopeKey: string;
  windowStart: number;
  used: string;
}

/** The claimed slots whose counter changed since it was last written. */
function changesOf(
  claimed: Claimed,
  records: ReadonlyMap<string, LimitRecord>,
  ledger: Ledger,
  persisted: ReadonlyMap<number, string>,
): Change[] {
  const changed: Change[] = [];
  for (const [slot, { limitId, scopeKey }] of claimed) {
    if (!records.has(limitId)) continue;
    const state = ledger.read(slot);
    if (persisted.get(slot) === `${state.windowStart}:${state.used}`) continue;
    changed.push({ slot, limitId, scopeKey, windowStart: state.windowStart, used: String(state.used) });
  }
  return changed;
}

/**
 * The counters of the current windows, as last stored, then every settlement the journal holds since; older
 * windows start again at zero anyway. Returns the journal, open for what settles next, and the sessions of gates
 * that are over, forgotten in the first commit.
 */
function loadCounters(
  deps: LimitCountersDeps,
  ledger: Ledger,
  claimed: Claimed,
  persisted: Map<number, string>,
  gate: LimitGate,
): { journal: LimitJournal | null; over: { limitId: string; scopeKey: string }[] } {
  const { repo, records, now } = deps;
  const covered = repo.journalCovered();
  /** The start of each calendar limit's current window, worked out once for the load and the replay below. */
  const starts = new Map<string, number>();
  const currentStart = (limitId: string, window: CalendarWindow): number => {
    let start = starts.get(limitId);
    if (start === undefined) starts.set(limitId, (start = windowStartOf(window, now())));
    return start;
  };
  const over: { limitId: string; scopeKey: string }[] = [];
  for (const { limitId, scopeKey, counter } of repo.counters()) {
    const record = records.get(limitId);
    if (record === undefined) continue;
    if (record.window === 'gauge') {
      // A session a `new_sessions` gate admitted while open (admission.ts), as of the hour it was last admitted
      // in: still under way after a restart, unless it no longer is (underWayAt; then it is forgotten).
      if (!underWayAt(counter.windowStart, now())) {
        over.push({ limitId, scopeKey });
        continue;
      }
      const slot = ledger.slotOf(limitId, scopeKey);
      if (slot >= 0) {
        ledger.mark(slot, counter.windowStart);
        persisted.set(slot, `${counter.windowStart}:${counter.used}`);
      }
      continue;
    }
    if (counter.windowStart !== currentStart(limitId, record.window)) continue;
    const slot = ledger.slotOf(limitId, scopeKey);
    if (slot >= 0) {
      ledger.load(slot, counter.windowStart, BigInt(counter.used));
      persisted.set(slot, `${counter.windowStart}:${counter.used}`);
    }
  }
  if (deps.journalDir === undefined) return { journal: null, over };
  const dir = deps.journalDir;
  for (const s of replayable(dir, covered)) {
    const record = records.get(s.limitId);
    if (record === undefined || record.window === 'gauge') continue;
    if (s.windowStart !== currentStart(s.limitId, record.window)) continue;
    const slot = ledger.slotOf(s.limitId, s.scopeKey);
    if (slot < 0) continue;
    const state = ledger.read(slot);
    if (state.windowStart !== s.windowStart) ledger.load(slot, s.windowStart, 0n);
    ledger.settle(slot, s.windowStart, 0n, s.used);
  }
  const nameOf = (slot: number) => {
    const key = claimed.get(slot);
    return key && `${key.limitId}|${key.scopeKey}`;
  };
  const journal = openLimitJournal(
    dir,
    covered,
    nameOf,
    (err) => deps.log.warn({ err: String(err).slice(0, 300) }, 'could not write the limit journal'),
    gate,
  );
  return { journal, over };
}

function countersOf(
  record: LimitRecord,
  claimed: Claimed,
  ledger: Ledger,
  now: () => number,
  gaugeShare: LimitCountersDeps['gaugeShare'],
): LimitCounterView[] {
  if (record.window === 'gauge') {
    // One figure, the account's: Gauge's reading of the window, whatever scope the gate applies to.
    const share = gaugeShare(record.gauge!.accountId, record.gauge!.windowId);
    const resetsAt = share?.resetsAt == null ? null : new Date(share.resetsAt).toISOString();
    return [{ key: record.scope.id, used: share?.percent ?? 0, reserved: 0, windowStart: null, resetsAt }];
  }
  const start = windowStartOf(record.window, now());
  const resetsAt = new Date(windowEndOf(record.window, start)).toISOString();
  const rows: LimitCounterView[] = [];
  for (const [slot, c] of claimed) {
    if (c.limitId !== record.id) continue;
    const state = ledger.read(slot);
    const used = state.windowStart === start ? state.used : 0n;
    rows.push({
      key: c.scopeKey === '*' ? null : c.scopeKey,
      used: shown(record, used),
      reserved: shown(record, state.reserved),
      windowStart: new Date(start).toISOString(),
      resetsAt,
    });
  }
  if (rows.length === 0 && record.scope.kind !== 'session') {
    rows.push({ key: record.scope.id, used: 0, reserved: 0, windowStart: new Date(start).toISOString(), resetsAt });
  }
  return rows.sort((a, b) => b.used - a.used).slice(0, COUNTERS_SHOWN);
}
