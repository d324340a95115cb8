import type { GaugeCollectorId } from '../../protocol/gauge-catalog.ts';
import type { GaugeHeaderObservation, GaugeRefreshOutcome, GaugeWorkerData } from '../../protocol/gauge-messages.ts';
import type { StoreEnv } from '../../store/env.ts';
import type { GaugeDataRepo } from '../../store/gauge-data-repo.ts';
import type { GaugeSourceRecord, GaugeSourceRepo } from '../../store/gauge-source-repo.ts';
import { collectorOf } from './collectors/index.ts';
import type { Collector } from './collectors/types.ts';
import { createEngine } from './engine.ts';
import { liveReading } from './live-headers.ts';
import { createScheduler, DEFAULT_TIMES, planNext, systemClock, type Clock, type ScheduleTimes } from './scheduler.ts';

// Everything the gauge worker does, without the thread: tests build it in-process with fake collectors and a
// fake clock. The worker (worker.ts) only wires it to its port.

export interface GaugeCoreDeps {
  env: StoreEnv;
  sources: GaugeSourceRepo;
  data: GaugeDataRepo;
  /** The built-in `service` source's collector. */
  service: Collector;
  credentialOf(ref: string): Promise<string | null>;
  options: Pick<GaugeWorkerData, 'poolSize' | 'timeoutMs' | 'allowedHosts'> &
    Partial<Pick<GaugeWorkerData, 'baseIntervalMs' | 'activeIntervalMs'>>;
  /** Tests: collectors by ID instead of the registry. */
  collectors?: Partial<Record<GaugeCollectorId, Collector>>;
  clock?: Clock;
  times?: Partial<ScheduleTimes>;
  /** A scheduled collection of this source ended (its readings, if any, are committed). */
  onCollected?(sourceId: string): void;
}

export interface GaugeCore {
  configure(enabled: boolean, retentionDays: number): void;
  setupChanged(): void;
  traffic(calls: number, headers: readonly GaugeHeaderObservation[]): void;
  refresh(sourceIds: readonly string[]): Promise<GaugeRefreshOutcome[]>;
  prune(): Promise<number>;
  close(): Promise<void>;
}

const PRUNE_EVERY_MS = 60 * 60_000;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

// Nothing to poll: live-header readings arrive with traffic. An explicit refresh of it answers at once.
const liveHeadersCollector: Collector = { providerId: 'live-headers', collect: async () => ({ readings: [] }) };

/** Loopback-only mode (tests): a source that would reach any other host is refused, never run. */
function refusal(source: GaugeSourceRecord, allowed: 'any' | 'loopback'): string | null {
  if (allowed === 'any' || source.kind === 'service' || source.kind === 'live_headers' || source.kind === 'local_logs')
    return null;
  let host: string | null = null;
  try {
    host = source.config.baseUrl ? new URL(source.config.baseUrl).hostname : null;
  } catch {
    host = null;
  }
  return host !== null && LOOPBACK.has(host)
    ? null
    : 'Only loopback hosts may be reached (SWITCHYARD_GAUGE_ALLOWED_HOSTS=loopback).';
}

// A factory: one closure holds the core's state (the schedule, its timer, the engine and the sources' runs).
export async function createGaugeCore(deps: GaugeCoreDeps): Promise<GaugeCore> {
  const { env, sources, data, options } = deps;
  const clock = deps.clock ?? systemClock;
  const times: ScheduleTimes = {
    ...DEFAULT_TIMES,
    ...(options.baseIntervalMs !== undefined && { baseMs: options.baseIntervalMs }),
    ...(options.activeIntervalMs !== undefined && { activeMs: options.activeIntervalMs }),
    ...deps.times,
  };
  await sources.ensureBuiltIns(clock.now());
  const salt = await data.identitySalt();
  const stop = new AbortController();
  let enabled = false;
  // Unknown until the edge configures it; the first configure then prunes at once.
  let retentionDays = -1;
  let pruneTimer: unknown = null;

  const collectorFor = (s: GaugeSourceRecord): Collector | undefined => {
    if (s.kind === 'service') return deps.service;
    if (s.kind === 'live_headers') return liveHeadersCollector;
    if (s.collectorId === null) return undefined;
    return deps.collectors ? deps.collectors[s.collectorId] : collectorOf(s.collectorId);
  };

  // Defined before the engine uses it through planNext.
  let scheduler: ReturnType<typeof createScheduler>;
  const engine = createEngine({
    env,
    data,
    source: (id) => sources.get(id),
    collectorFor,
    credentialOf: deps.credentialOf,
    refuse: (s) => refusal(s, options.allowedHosts),
    planNext: (state, at) => planNext(state, at, scheduler.isActive(), times),
    poolSize: options.poolSize,
    timeoutMs: options.timeoutMs,
    now: () => new Date(clock.now()),
    salt,
    stop: stop.signal,
  });
  scheduler = createScheduler({
    clock,
    times,
    due: () =>
      sources
        .all()
        .filter((s) => s.enabled && s.kind !== 'live_headers')
        .map((s) => s.id),
    state: (id) => data.state(id)?.state,
    collect: (id) => engine.collect(id).finally(() => deps.onCollected?.(id)),
  });

  // One prune at a time: two running together would count the same rows twice.
  let pruning: Promise<unknown> = Promise.resolve();
  function prune(): Promise<number> {
    const run = pruning.then(() => (retentionDays < 0 ? 0 : data.prune(clock.now() - retentionDays * 86_400_000)));
    pruning = run.catch(() => undefined);
    return run;
  }
  function armPrune(): void {
    pruneTimer = clock.setTimer(() => {
      void prune().catch(() => undefined);
      armPrune();
    }, PRUNE_EVERY_MS);
  }
  armPrune();

  return {
    configure(nextEnabled, nextRetention) {
      const retentionChanged = nextRetention !== retentionDays;
      enabled = nextEnabled;
      retentionDays = nextRetention;
      scheduler.setEnabled(enabled);
      if (retentionChanged) void prune().catch(() => undefined);
    },
    setupChanged: () => scheduler.rearm(),
    traffic(calls, headers) {
      if (!enabled) return;
      if (calls > 0) scheduler.traffic();
      if (headers.length === 0 || sources.get('live-headers')?.enabled !== true) return;
      const readings = headers.flatMap((o) => liveReading(o) ?? []);
      if (readings.length === 0) return;
      void env.commit(() => readings.forEach((r) => data.stageReading('live-headers', r))).catch(() => undefined);
    },
    refresh: (ids) => engine.refresh(ids),
    prune,
    async close() {
      scheduler.close();
      if (pruneTimer !== null) clock.clearTimer(pruneTimer);
      stop.abort();
      // The aborted runs end before the worker closes LMDB and is stopped: a thread stopped inside a native call
      // (the keychain's read of a credential, a commit) aborts the whole process.
      await Promise.allSettled([engine.settled(), pruning]);
    },
  };
}
