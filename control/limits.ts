import type { Logger } from 'pino';
import { ServiceError } from '../protocol/errors.ts';
import { LIMIT_BOUNDS, type LimitRecord, type LimitScopeKind, type LimitView } from '../protocol/http/limits.ts';
import { newId } from '../protocol/ids.ts';
import type { ActiveLimit, AdmissionSource, AdmissionState, LimitsPort } from '../protocol/ports/limits.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { LimitRepo } from '../store/limit-repo.ts';
import type { Actor } from './actor.ts';
import { auditedCrud } from './crud.ts';
import type { EventBus } from './events.ts';
import { type LimitCounters, openLimitCounters } from './limit-counters.ts';
import { checkGauge, checkMax, checkScope } from './limits-validation.ts';
import { createLoopBrake, type LoopBrakeService } from './loop-brake.ts';
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

const notFound = (id: string) =>
  new ServiceError('NOT_FOUND', `No limit with ID \`${id.slice(0, 40)}\`.`, { param: 'id' });

/** The bound in the ledger's unit: nano-dollars for `usd`, else the count itself. */
const ledgerMax = (r: LimitRecord): bigint =>
  r.metric === 'usd' ? BigInt(Math.round(r.max * 1e9)) : BigInt(Math.floor(r.max));
// (A `gauge_percent` limit's max stays on its record: admission compares the reading's percent with it.)

const metadataOf = (r: LimitRecord) => ({ scope: r.scope.kind, window: r.window, metric: r.metric, max: r.max });

export function createLimits(deps: LimitsDeps): LimitsPort & {
  admission: AdmissionSource;
  /**
   * Whether admission has nothing to do (no limit enabled, the loop brake off): now, then after each change
   * of it. An edge thread without the limits' state hands its gateway calls to this thread while it is false.
   */
  followAdmission(follower: Follower<AdmissionState>): () => void;
  /** The ledger's memory, its gate's, and the claims the edge threads report (limit-counters.ts). */
  shared: LimitCounters['shared'];
  heardClaim: LimitCounters['heardClaim'];
  /** A limit by ID, for an edge thread's report of a refusal. */
  record(id: string): LimitRecord | undefined;
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
  let active: ActiveLimit[] = [];
  const brake = createLoopBrake({ env, repo, audit: deps.audit, bus: deps.bus, log, now });
  const watch = createAdmissionWatch(() => ({ limits: active, brake: brake.active() }));
  const counters = openLimitCounters({
    env,
    repo,
    bus: deps.bus,
    log,
    now,
    records,
    persistEveryMs: deps.persistEveryMs,
    journalDir: deps.journalDir,
    gaugeShare: deps.gaugeShare,
  });
  const { ledger, journal } = counters;
  refreshActive();
  watch.reset();

  return {
    list: () => [...records.values()].map((r) => limitView(counters, r)),
    get: (id) => limitView(counters, must(records, id)),
    async create(input, actor: Actor, requestId) {
      if (records.size >= LIMIT_BOUNDS.count)
        throw new ServiceError('CONFLICT', `At most ${LIMIT_BOUNDS.count} limits.`);
      checkMax(input.metric, input.max);
      const gauge = checkGauge(input, deps.gaugeAccountExists);
      const scope = await checkScope(input, deps.scopeExists);
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
      await watch.tell();
      return limitView(counters, record);
    },
    async update(id, patch, actor, requestId) {
      const current = must(records, id);
      if (patch.max !== undefined) checkMax(current.metric, patch.max);
      const next: LimitRecord = { ...current, ...patch, updatedAt: new Date(now()).toISOString() };
      await crud.update(next, { action: 'limit.update', actor, requestId, metadata: metadataOf(next) });
      records.set(id, next);
      refreshActive();
      await watch.tell();
      return limitView(counters, next);
    },
    async remove(id, actor, requestId) {
      const current = must(records, id);
      const entry = { action: 'limit.delete' as const, actor, requestId, metadata: metadataOf(current) };
      await crud.remove(id, entry, () => repo.stageForget(id));
      records.delete(id);
      refreshActive();
      await watch.tell();
    },
    brake: brakeTelling(brake, watch.tell),
    followAdmission: watch.follow,
    shared: counters.shared,
    heardClaim: counters.heardClaim,
    record: (id) => records.get(id),
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
        counters.tripped(record, key, windowStart, resetsAt);
      },
    },
    close: () => counters.close(),
  };

  function refreshActive(): void {
    active = [...records.values()].filter((r) => r.enabled).map((record) => ({ record, max: ledgerMax(record) }));
  }
}

// A gate stored before `stops` existed stops every call, and says so.
function limitView(counters: LimitCounters, record: LimitRecord): LimitView {
  return {
    ...record,
    ...(record.gauge && { gauge: { stops: 'calls' as const, ...record.gauge } }),
    counters: counters.counters(record),
  };
}

function must(records: ReadonlyMap<string, LimitRecord>, id: string): LimitRecord {
  const record = id.length <= 40 ? records.get(id) : undefined;
  if (record === undefined) throw notFound(id);
  return record;
}

/** What admission reads, told to the followers (the edge threads) whenever it changes. */
function createAdmissionWatch(now: () => AdmissionState) {
  const followers = createFollowers<AdmissionState>();
  let told = now();
  return {
    /** Takes the state as it is now, without telling (at start). */
    reset(): void {
      told = now();
    },
    /** Tells the followers when the limits or the brake changed; settles once each has it. */
    async tell(): Promise<void> {
      const next = now();
      if (next.limits === told.limits && next.brake === told.brake) return;
      told = next;
      await followers.tell(told);
    },
    follow(follower: Follower<AdmissionState>): () => void {
      follower(told);
      return followers.add(follower);
    },
  };
}

/** The loop brake, whose changes may change idleness. */
function brakeTelling(brake: LoopBrakeService, tell: () => Promise<void>): LimitsPort['brake'] {
  return {
    ...brake,
    async update(patch, actor, requestId) {
      const config = await brake.update(patch, actor, requestId);
      await tell();
      return config;
    },
    async resume(session, actor, requestId) {
      const resumed = await brake.resume(session, actor, requestId);
      await tell();
      return resumed;
    },
  };
}
