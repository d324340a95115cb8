import type { GaugeRefreshOutcome, GaugeSourceState } from '../../protocol/gauge-messages.ts';
import { identityHash } from '../../protocol/gauge-redact.ts';
import type { StoreEnv } from '../../store/env.ts';
import type { GaugeDataRepo } from '../../store/gauge-data-repo.ts';
import type { GaugeSourceRecord } from '../../store/gauge-source-repo.ts';
import type { GaugeActivityBucket, GaugeProviderStatus, GaugeReading } from '../../protocol/gauge.ts';
import type { CollectResult, Collector } from './collectors/types.ts';
import { createSemaphore, type Semaphore } from './semaphore.ts';
import { runWithin, type RunResult } from './run-source.ts';
import { sanitizeActivity, sanitizeReadings, sanitizeStatus } from './sanitize.ts';

// Runs sources: through one bounded pool, each under its time limit, one collection per source at a time (a
// second caller joins the first). A success replaces the source's readings; a failure stores only the outcome,
// so the last good snapshot stays. Explicit refreshes and the scheduler share the pool.

export interface EngineDeps {
  env: StoreEnv;
  data: GaugeDataRepo;
  source(id: string): GaugeSourceRecord | undefined;
  /** The collector that serves a source, or undefined when none is installed. */
  collectorFor(source: GaugeSourceRecord): Collector | undefined;
  credentialOf(ref: string): Promise<string | null>;
  /** Null when the source may run; otherwise why not (a host outside the allowed set). */
  refuse(source: GaugeSourceRecord): string | null;
  /** When the source should run next, once its state after this run is known. */
  planNext(state: GaugeSourceState, finishedAt: number): number | null;
  poolSize: number;
  timeoutMs: number;
  now(): Date;
  salt: string;
  /** Aborted when the service stops: every running collector's signal follows it. */
  stop: AbortSignal;
}

export interface Engine {
  collect(sourceId: string): Promise<GaugeRefreshOutcome>;
  refresh(sourceIds: readonly string[]): Promise<GaugeRefreshOutcome[]>;
  /** Settles once no collection runs: each has written its state (or failed to). */
  settled(): Promise<void>;
  pool: Semaphore;
}

const MAX_CURSOR_CHARS = 1_000_000;
const NEEDS_CREDENTIAL = new Set(['admin_key', 'api_key', 'oauth_device', 'browser_assisted']);

const EMPTY_STATE: GaugeSourceState = {
  lastOutcome: null,
  lastRunAt: null,
  lastSuccessAt: null,
  lastFailureAt: null,
  consecutiveFailures: 0,
  nextRunAt: null,
  retryAfterMs: null,
};

interface Checked {
  readings: GaugeReading[];
  status: GaugeProviderStatus | null;
  activity: GaugeActivityBucket[];
  cursor: unknown;
  identity: string | null;
  retryAfterMs: number | null;
}

/** A collector's result as it may be stored; throws when it is not shaped like a result at all. */
function check(r: CollectResult, sourceId: string, providerId: string, now: Date): Checked {
  const retry = r.retryAfterMs;
  // A cursor is meant to be small (offsets, a bounded ID window); one that is not is a collector bug.
  if (r.state !== undefined && (JSON.stringify(r.state)?.length ?? 0) > MAX_CURSOR_CHARS)
    throw new RangeError('cursor too large');
  const status = Array.isArray(r.statuses) && r.statuses[0] ? sanitizeStatus(r.statuses[0], providerId, now) : null;
  return {
    readings: sanitizeReadings(Array.isArray(r.readings) ? r.readings : [], sourceId, providerId, now),
    status,
    activity: Array.isArray(r.activity) ? sanitizeActivity(r.activity, sourceId, providerId) : [],
    cursor: r.state,
    identity: typeof r.identity === 'string' && r.identity !== '' ? r.identity : null,
    retryAfterMs: typeof retry === 'number' && Number.isFinite(retry) && retry > 0 ? retry : null,
  };
}

/** A source's state after a run that ended at `at` (its next run is planned after). */
function stateAfter(
  prev: GaugeSourceState | undefined,
  result: RunResult,
  checked: Checked | null,
  at: number,
): GaugeSourceState {
  const state: GaugeSourceState = { ...EMPTY_STATE, ...prev, lastRunAt: at };
  if (result.ok) {
    state.lastOutcome = 'ok';
    state.lastSuccessAt = at;
    state.consecutiveFailures = 0;
    state.retryAfterMs = checked!.retryAfterMs;
  } else {
    state.lastOutcome = result.code;
    state.lastFailureAt = at;
    state.consecutiveFailures += 1;
    state.retryAfterMs = result.retryAfterMs;
  }
  return state;
}

function outcome(sourceId: string, result: RunResult, readings: number, at: Date): GaugeRefreshOutcome {
  const retry = result.ok ? result.result.retryAfterMs : result.retryAfterMs;
  return {
    sourceId,
    ok: result.ok,
    code: result.ok ? null : result.code,
    message: result.ok ? null : result.message,
    readings,
    finishedAt: at.toISOString(),
    retryAfterMs: typeof retry === 'number' && Number.isFinite(retry) && retry > 0 ? retry : null,
  };
}

// A factory: one closure holds the engine's state (its pool, the runs in flight); `run` is one source's run.
export function createEngine(deps: EngineDeps): Engine {
  const pool = createSemaphore(deps.poolSize);
  const inflight = new Map<string, Promise<GaugeRefreshOutcome>>();

  async function attempt(source: GaugeSourceRecord): Promise<RunResult> {
    const refused = deps.refuse(source);
    if (refused !== null) return { ok: false, code: 'unreachable', message: refused, retryAfterMs: null };
    const collector = deps.collectorFor(source);
    if (!collector)
      return {
        ok: false,
        code: 'not_configured',
        message: 'No collector for this source is installed yet.',
        retryAfterMs: null,
      };
    let credential: string | null = null;
    if (NEEDS_CREDENTIAL.has(source.authMode)) {
      credential =
        source.credentialRef === null ? null : await deps.credentialOf(source.credentialRef).catch(() => null);
      if (credential === null)
        return {
          ok: false,
          code: 'not_configured',
          message: 'No credential is stored for this account.',
          retryAfterMs: null,
        };
    }
    const stored = deps.data.state(source.id);
    // `providerId` rides along so one collector (status pages) can serve several providers.
    const config = { ...source.config, ...(source.providerId !== null && { providerId: source.providerId }) };
    return runWithin(
      collector,
      { accountId: source.id, credential, config, now: deps.now, state: stored?.cursor ?? null },
      deps.timeoutMs,
      deps.stop,
    );
  }

  async function run(sourceId: string): Promise<GaugeRefreshOutcome> {
    const source = deps.source(sourceId);
    if (!source)
      return outcome(
        sourceId,
        { ok: false, code: 'not_configured', message: 'The source no longer exists.', retryAfterMs: null },
        0,
        deps.now(),
      );
    // Read again once a slot is free: a source changed while it waited runs as it is now.
    const ran = await pool.run(() => attempt(deps.source(sourceId) ?? source));
    const finished = deps.now();
    const at = finished.getTime();
    const prev = deps.data.state(sourceId);
    const providerId = source.providerId ?? 'service';
    let result: RunResult = ran;
    let checked: Checked | null = null;
    if (ran.ok) {
      try {
        checked = check(ran.result, source.id, providerId, finished);
      } catch {
        // What came back was not even shaped like a result (a null inside a list): nothing of it is kept.
        result = {
          ok: false,
          code: 'malformed',
          message: 'The collector returned something unreadable.',
          retryAfterMs: null,
        };
      }
    }
    const state = stateAfter(prev?.state, result, checked, at);
    state.nextRunAt = deps.planNext(state, at);
    await deps.env.commit(() => {
      // Deleted while it ran: nothing of it is kept.
      if (deps.source(sourceId) === undefined) return;
      let cursor = prev?.cursor ?? null;
      let identity = prev?.identityHash ?? null;
      if (checked) {
        for (const reading of checked.readings) deps.data.stageReading(sourceId, reading);
        if (checked.status) deps.data.stageStatus(checked.status);
        deps.data.stageActivity(checked.activity);
        if (checked.cursor !== undefined) cursor = checked.cursor;
        if (checked.identity !== null) identity = identityHash(checked.identity, deps.salt);
      }
      deps.data.stageState(sourceId, { state, cursor, identityHash: identity });
    });
    const written = checked?.readings.length ?? 0;
    return outcome(sourceId, result, written, finished);
  }

  function collect(sourceId: string): Promise<GaugeRefreshOutcome> {
    let running = inflight.get(sourceId);
    if (!running) {
      running = run(sourceId).finally(() => inflight.delete(sourceId));
      inflight.set(sourceId, running);
    }
    return running;
  }

  return {
    collect,
    refresh: (ids) => Promise.all(ids.map(collect)),
    settled: () => Promise.allSettled([...inflight.values()]).then(() => undefined),
    pool,
  };
}
