import type { Logger } from 'pino';
import { ServiceError } from '../protocol/errors.ts';
import {
  LIMIT_BOUNDS,
  type LimitCounterView,
  type LimitCreate,
  type LimitRecord,
  type LimitScopeKind,
  type LimitView,
} from '../protocol/http/limits.ts';
import { newId } from '../protocol/ids.ts';
import { createLedger, createLedgerBuffer } from '../state/limit-ledger.ts';
import type { Ledger } from '../protocol/ports/limits.ts';
import type { ActiveLimit, AdmissionSource, LimitsPort } from '../protocol/ports/limits.ts';
import { type CalendarWindow, underWayAt, windowEndOf, windowStartOf } from '../protocol/limit-windows.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import { type LimitJournal, openLimitJournal, replayable } from '../store/limit-journal.ts';
import type { LimitRepo } from '../store/limit-repo.ts';
import type { Actor } from './actor.ts';
import { auditedCrud } from './crud.ts';
import type { EventBus } from './events.ts';
import { createLoopBrake } from './loop-brake.ts';
import { createFollowers, type Follower } from '../state/followers.ts';

// Enforced limits in the control plane: their records (audited), the snapshot admission reads, and the ledger's
// counters, which it loads at start (the stored snapshot, then the journal) and persists while the service runs.
// Admission itself runs on the edge (edge/gateway/admission.ts) against the shared ledger; this side only hears
// which slots were claimed and what settled.

export interface LimitsDeps {
  env: StoreEnv;
  repo: LimitRepo;
  audit: AuditRepo;
  bus: EventBus;
  log: Logger;
  /** Whether the token, service account, route pack or credential a scope names exists (a typo never counts). */
  scopeExists(kind: LimitScopeKind, id: string): Promise<boolean>;
  now?: () => number;
  /** How often the counters are stored (and tripped counters' window ends announced). */
  persistEveryMs?: number;
  /** Where settlements are journaled between stores (store/limit-journal.ts); none in unit tests. */
  journalDir?: string;
  /** The freshest reading of a Gauge account's window (null when Gauge is off or has none). */
  gaugeShare(accountId: string, windowId: string): { percent: number; resetsAt: number | null } | null;
  /** Whether a Gauge account exists, for `gauge` limits. */
  gaugeAccountExists(accountId: string): boolean;
  /** A refusal, per metric, for /metrics. */
  onRefusal?(metric: LimitRecord['metric']): void;
}

const NANO = 1_000_000_000n;
const COUNTERS_SHOWN = 50;
const bad = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });
const notFound = (id: string) =>
  new ServiceError('NOT_FOUND', `No limit with ID \`${id.slice(0, 40)}\`.`, { param: 'id' });

/** The bound in the ledger's unit: nano-dollars for `usd`, else the count itself. */
const ledgerMax = (r: LimitRecord): bigint =>
  r.metric === 'usd' ? BigInt(Math.round(r.max * 1e9)) : BigInt(Math.floor(r.max));
// (A `gauge_percent` limit's max stays on its record: admission compares the reading's percent with it.)
/** A ledger figure in the limit's unit. */
const shown = (r: LimitRecord, n: bigint): number => (r.metric === 'usd' ? Number(n) / Number(NANO) : Number(n));

// Over 80 lines as a closure of short methods over one state, the shape of every control service here.
export function createLimits(deps: LimitsDeps): LimitsPort & {
  admission: AdmissionSource;
  /**
   * Whether admission has nothing to do (no limit enabled, the loop brake off): now, then after each change
   * of it. An edge thread without the limits' state hands its gateway calls to this thread while it is false.
   */
  followIdle(follower: Follower<boolean>): () => void;
  close(): Promise<void>;
} {
  const { env, repo, log } = deps;
  const now = deps.now ?? Date.now;
  const crud = auditedCrud<LimitRecord>({
    env,
    audit: deps.audit,
    resourceType: 'limit',
    repo,
    keyOf: (l) => l.id,
    notFound,
  });
  const records = new Map(repo.all().map((r) => [r.id, r]));
  /** Every slot claimed, by any thread, with its key: what is persisted and shown. */
  const claimed = new Map<number, { limitId: string; scopeKey: string }>();
  const ledger: Ledger = createLedger(createLedgerBuffer(), (slot, limitId, scopeKey) =>
    claimed.set(slot, { limitId, scopeKey }),
  );
  /** What each slot last persisted as, `windowStart:used`. */
  const persisted = new Map<number, string>();
  /** Counters refused in their current window: `limitId|key` -> when that window ends. */
  const tripped = new Map<string, { record: LimitRecord; key: string; resetsAt: number }>();
  let active: ActiveLimit[] = [];
  const brake = createLoopBrake({ env, repo, audit: deps.audit, bus: deps.bus, log, now });
  const idleFollowers = createFollowers<boolean>();
  const idle = () => active.length === 0 && !brake.active();
  let toldIdle = true;
  /** Tells the followers when idleness changed; settles once each has it. */
  const tellIdle = async () => {
    if (idle() === toldIdle) return;
    toldIdle = idle();
    await idleFollowers.tell(toldIdle);
  };

  function refreshActive(): void {
    active = [...records.values()].filter((r) => r.enabled).map((record) => ({ record, max: ledgerMax(record) }));
  }

  // The counters of the current windows, as last stored, then every settlement the journal holds since; older
  // windows start again at zero anyway.
  const covered = repo.journalCovered();
  /** The start of each calendar limit's current window, worked out once for the load and the replay below. */
  const starts = new Map<string, number>();
  const currentStart = (limitId: string, window: CalendarWindow): number => {
    let start = starts.get(limitId);
    if (start === undefined) starts.set(limitId, (start = windowStartOf(window, now())));
    return start;
  };
  /** Sessions of gates that are over, forgotten in the first commit. */
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
  const journal = deps.journalDir === undefined ? null : replayJournal(deps.journalDir);
  refreshActive();
  toldIdle = idle();

  function replayJournal(dir: string): LimitJournal {
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
    return openLimitJournal(dir, covered, nameOf, (err) =>
      log.warn({ err: String(err).slice(0, 300) }, 'could not write the limit journal'),
    );
  }

  let writing: Promise<void> = Promise.resolve();
  /**
   * Writes the counters of every claimed slot that changed since it was last written, with the journal generation
   * this snapshot includes (the journal turns over at the same moment), then deletes the journal files it covers.
   * About once a second: a commit per settling turn cost the edge ~13 us and LMDB's write thread ~16 us a request
   * under load (bench/RESULTS.md, W3.6); the journal keeps every settlement in between.
   */
  function persist(force = false): Promise<void> {
    const changed: { slot: number; limitId: string; scopeKey: string; windowStart: number; used: string }[] = [];
    for (const [slot, { limitId, scopeKey }] of claimed) {
      if (!records.has(limitId)) continue;
      const state = ledger.read(slot);
      const tag = `${state.windowStart}:${state.used}`;
      if (persisted.get(slot) === tag) continue;
      persisted.set(slot, tag);
      changed.push({ slot, limitId, scopeKey, windowStart: state.windowStart, used: String(state.used) });
    }
    resetTripped();
    if ((changed.length === 0 && !force) || !env.isOpen()) return writing;
    const generation = journal?.rotate() ?? null;
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
  // What the journal replayed is stored at once, and its files go.
  void persist(journal !== null || over.length > 0);
  // A sweep: window resets to announce, the counters to store.
  const timer = setInterval(() => void persist(), deps.persistEveryMs ?? 1000);
  timer.unref();

  function resetTripped(): void {
    const t = now();
    for (const [name, trip] of tripped) {
      if (t < trip.resetsAt) continue;
      tripped.delete(name);
      deps.bus.publish('limit.reset', { limitId: trip.record.id, name: trip.record.name, key: trip.key });
    }
  }

  function counters(record: LimitRecord): LimitCounterView[] {
    if (record.window === 'gauge') {
      // One figure, the account's: Gauge's reading of the window, whatever scope the gate applies to.
      const share = deps.gaugeShare(record.gauge!.accountId, record.gauge!.windowId);
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

  // A gate stored before `stops` existed stops every call, and says so.
  const view = (record: LimitRecord): LimitView => ({
    ...record,
    ...(record.gauge && { gauge: { stops: 'calls' as const, ...record.gauge } }),
    counters: counters(record),
  });
  const must = (id: string): LimitRecord => {
    const record = id.length <= 40 ? records.get(id) : undefined;
    if (record === undefined) throw notFound(id);
    return record;
  };

  function checkMax(metric: LimitRecord['metric'], max: number): void {
    if (metric === 'gauge_percent') {
      if (max > 100) throw bad('max', 'A `gauge_percent` limit is a share of the window: at most 100.');
    } else if (metric === 'usd') {
      if (max > LIMIT_BOUNDS.usdMax) throw bad('max', `A dollar limit is at most ${LIMIT_BOUNDS.usdMax}.`);
    } else if (!Number.isInteger(max)) throw bad('max', `A ${metric} limit is a whole number.`);
  }

  async function checkScope(input: LimitCreate): Promise<LimitRecord['scope']> {
    const { kind } = input.scope;
    const id = input.scope.id ?? null;
    if (kind === 'service') {
      if (id !== null) throw bad('scope.id', 'A `service` limit counts every call: it takes no `id`.');
      return { kind, id };
    }
    if (kind === 'session') return { kind, id };
    if (id === null) throw bad('scope.id', `A \`${kind}\` limit names its ${kind.replace('_', ' ')} in \`id\`.`);
    if (!(await deps.scopeExists(kind, id))) throw bad('scope.id', `No ${kind.replace('_', ' ')} \`${id}\`.`);
    return { kind, id };
  }

  /** `gauge` window, `gauge_percent` metric and a `gauge` account come together or not at all. */
  function checkGauge(input: LimitCreate): LimitRecord['gauge'] {
    const gaugeWindow = input.window === 'gauge';
    if (gaugeWindow !== (input.metric === 'gauge_percent') || gaugeWindow !== (input.gauge !== undefined)) {
      throw bad('gauge', 'A Gauge window limit has `window` `gauge`, `metric` `gauge_percent` and a `gauge` object.');
    }
    if (input.gauge === undefined) return null;
    if (!deps.gaugeAccountExists(input.gauge.accountId))
      throw bad('gauge.accountId', `No Gauge account \`${input.gauge.accountId}\`; see GET /v1/gauge/accounts.`);
    return {
      accountId: input.gauge.accountId,
      windowId: input.gauge.windowId,
      stops: input.gauge.stops ?? 'new_sessions',
    };
  }

  const metadataOf = (r: LimitRecord) => ({ scope: r.scope.kind, window: r.window, metric: r.metric, max: r.max });

  return {
    list: () => [...records.values()].map(view),
    get: (id) => view(must(id)),
    async create(input, actor: Actor, requestId) {
      if (records.size >= LIMIT_BOUNDS.count)
        throw new ServiceError('CONFLICT', `At most ${LIMIT_BOUNDS.count} limits.`);
      checkMax(input.metric, input.max);
      const gauge = checkGauge(input);
      const scope = await checkScope(input);
      const at = new Date(now()).toISOString();
      const record: LimitRecord = {
        id: newId('lim_'),
        name: input.name,
        enabled: input.enabled ?? true,
        scope,
        window: input.window,
        metric: input.metric,
        max: input.max,
        gauge,
        createdAt: at,
        updatedAt: at,
      };
      await crud.create(record, { action: 'limit.create', actor, requestId, metadata: metadataOf(record) });
      records.set(record.id, record);
      refreshActive();
      await tellIdle();
      return view(record);
    },
    async update(id, patch, actor, requestId) {
      const current = must(id);
      if (patch.max !== undefined) checkMax(current.metric, patch.max);
      const next: LimitRecord = { ...current, ...patch, updatedAt: new Date(now()).toISOString() };
      await crud.update(next, { action: 'limit.update', actor, requestId, metadata: metadataOf(next) });
      records.set(id, next);
      refreshActive();
      await tellIdle();
      return view(next);
    },
    async remove(id, actor, requestId) {
      const current = must(id);
      const entry = { action: 'limit.delete' as const, actor, requestId, metadata: metadataOf(current) };
      await crud.remove(id, entry, () => repo.stageForget(id));
      records.delete(id);
      refreshActive();
      await tellIdle();
    },
    brake: {
      ...brake,
      async update(patch, actor, requestId) {
        const config = await brake.update(patch, actor, requestId);
        await tellIdle();
        return config;
      },
      async resume(session, actor, requestId) {
        const resumed = await brake.resume(session, actor, requestId);
        await tellIdle();
        return resumed;
      },
    },
    followIdle(follower) {
      follower(toldIdle);
      return idleFollowers.add(follower);
    },
    admission: {
      active: () => active,
      ledger,
      brake,
      gaugeShare: deps.gaugeShare,
      settled(slot, windowStart, used) {
        journal?.append(slot, windowStart, used);
      },
      journal: () => journal?.flush(),
      now,
      tripped(record, key, windowStart, resetsAt) {
        deps.onRefusal?.(record.metric);
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
    },
    async close() {
      clearInterval(timer);
      await persist();
      journal?.close();
    },
  };
}
