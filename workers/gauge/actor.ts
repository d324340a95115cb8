import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { ServiceError } from '../../protocol/errors.ts';
import type {
  GaugeHeaderObservation,
  GaugeRefreshOutcome,
  GaugeReply,
  GaugeRequest,
  GaugeWorkerData,
} from '../../protocol/gauge-messages.ts';
import { LIVE_HEADER_NAMES } from './live-headers.ts';

// The edge's handle on the gauge worker. Nothing here waits on a collector except `refresh`, which an explicit
// POST /v1/gauge/refresh asks for. Gateway traffic reaches the worker as a counter and the latest rate-limit
// headers per provider record, posted at most once per `trafficEveryMs`, so the hot path costs a map write.

export interface GaugeActor {
  configure(enabled: boolean, retentionDays: number): void;
  /** Sources changed in the store. */
  setupChanged(): void;
  /** One refresh at a time: a second one while the first runs is 409 CONFLICT. */
  refresh(sourceIds: string[]): Promise<GaugeRefreshOutcome[]>;
  refreshing(): boolean;
  /** A gateway call finished: the scheduler refreshes faster while calls flow. */
  traffic(): void;
  /** A gateway call's answer head: keeps its rate-limit headers, if any, for the live-headers source. */
  observe(providerRecordId: string, providerKind: string, headers: Readonly<Record<string, string>>): void;
  prune(): Promise<number>;
  close(): Promise<void>;
}

export interface GaugeActorOptions extends Partial<Omit<GaugeWorkerData, 'dataDir'>> {
  dataDir: string;
  log: Logger;
  trafficEveryMs?: number;
  /** The worker's scheduled collections of these sources ended (the edge evaluates alerts then). */
  onCollected?(sourceIds: string[]): void;
  /** How long after a worker stops it is started again (30 s); tests shorten it. */
  respawnQuietMs?: number;
  /** The worker's entry module; tests wrap the real one to make it die. */
  entry?: URL;
  /** While Gauge is off, how long after the actor's creation its worker starts unasked (30 s). */
  idleStartMs?: number;
}

/** Relay provider kinds whose headers Gauge reads, as Gauge's provider IDs. */
const HEADER_PROVIDERS: Record<string, string> = { openai: 'openai', anthropic: 'anthropic', openrouter: 'openrouter' };
const MAX_HEADER_VALUE = 64;
const CLOSE_TIMEOUT_MS = 10_000;
const RESPAWN_QUIET_MS = 30_000;
const IDLE_START_MS = 30_000;

function workerDataOf(options: GaugeActorOptions): GaugeWorkerData {
  return {
    dataDir: options.dataDir,
    poolSize: options.poolSize ?? 4,
    timeoutMs: options.timeoutMs ?? 15_000,
    baseIntervalMs: options.baseIntervalMs ?? 15 * 60_000,
    activeIntervalMs: options.activeIntervalMs ?? 2 * 60_000,
    allowedHosts: options.allowedHosts ?? 'any',
  };
}

/** The live rate-limit headers Gauge reads of an answer, each value bounded; null when it has none. */
function liveHeaderFields(h: Readonly<Record<string, string | undefined>>): Record<string, string> | null {
  let fields: Record<string, string> | null = null;
  for (const name of LIVE_HEADER_NAMES) {
    const v = h[name];
    if (v !== undefined && v.length <= MAX_HEADER_VALUE) (fields ??= {})[name] = v;
  }
  return fields;
}

/** Gateway traffic for the worker, batched: calls counted and each provider's latest headers, every `everyMs`. */
function trafficBatch(post: (m: GaugeRequest) => void, everyMs: number) {
  let calls = 0;
  const headers = new Map<string, GaugeHeaderObservation>();
  let timer: NodeJS.Timeout | null = null;
  function flush(): void {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (calls === 0 && headers.size === 0) return;
    post({ kind: 'gauge.traffic', calls, headers: [...headers.values()] });
    calls = 0;
    headers.clear();
  }
  function schedule(): void {
    if (timer !== null) return;
    timer = setTimeout(flush, everyMs);
    timer.unref();
  }
  return {
    call() {
      calls++;
      schedule();
    },
    headers(observed: GaugeHeaderObservation) {
      headers.set(observed.providerRecordId, observed);
      schedule();
    },
    flush,
  };
}

/**
 * With Gauge on, the worker starts with the service (the first configure), so the scheduler and built-in sources
 * are ready before any request. While it is off there is nothing to collect: the worker starts at the first call,
 * or unasked after `ms` to apply the retention, so a service that lives a few seconds (a test's) never pays for a
 * thread that loads LMDB, the vault and every collector.
 */
function idleStart(ms: number, start: () => void): NodeJS.Timeout {
  const timer = setTimeout(start, ms);
  timer.unref();
  return timer;
}

type Refreshed = Extract<GaugeReply, { kind: 'gauge.refreshed' }>;

type Pending = Map<number, { resolve(m: GaugeReply): void; reject(e: ServiceError): void }>;

/** The worker's answers: each settles its call; the worker holds the process open only while calls wait. */
function replies(w: Worker, pending: Pending, onCollected: GaugeActorOptions['onCollected']) {
  return (m: GaugeReply) => {
    if (m.kind === 'gauge.collected') return onCollected?.(m.sourceIds);
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (!p) return;
    if (m.kind === 'gauge.failed') p.reject(ServiceError.fromPayload(m.error));
    else p.resolve(m);
    if (pending.size === 0) w.unref();
  };
}

/** Waits for the worker's close (its stores flushed) at most CLOSE_TIMEOUT_MS; a failure is logged. */
async function closedWithin(closing: Promise<unknown>, log: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      closing,
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), CLOSE_TIMEOUT_MS))),
    ]);
  } catch (err) {
    log.warn({ err: err instanceof Error ? err.message : String(err) }, 'gauge worker did not close cleanly');
  } finally {
    clearTimeout(timer);
  }
}

// A factory: one closure holds the worker and its calls in flight; `spawn` starts it, `lost` restarts it.
export function createGaugeActor(options: GaugeActorOptions): GaugeActor {
  const workerData = workerDataOf(options);
  const { log } = options;
  const entry = options.entry ?? new URL('./entry.js', import.meta.url);
  const respawnQuietMs = options.respawnQuietMs ?? RESPAWN_QUIET_MS;
  let worker: Worker | null = null;
  const pending: Pending = new Map();
  let nextId = 1;
  let config: { enabled: boolean; retentionDays: number } | null = null;
  let inRefresh = false;
  let closed = false;
  let lostAt = -Infinity;
  let respawnTimer: NodeJS.Timeout | null = null;

  function spawn(): Worker {
    const w = new Worker(entry, { workerData });
    w.on('message', replies(w, pending, options.onCollected));
    const lost = (err?: Error) => {
      if (worker !== w) return;
      worker = null;
      lostAt = Date.now();
      for (const p of pending.values()) p.reject(new ServiceError('INTERNAL', 'The gauge worker stopped.'));
      pending.clear();
      if (closed) return;
      log.error({ err: err?.message, restartInMs: respawnQuietMs }, 'gauge worker stopped; restarting it');
      // The scheduler lives in the worker: bring it back even if nothing else asks for it.
      respawnTimer = setTimeout(() => {
        respawnTimer = null;
        if (!closed && worker === null) worker = spawn();
      }, respawnQuietMs);
      respawnTimer.unref();
    };
    w.on('error', lost);
    w.on('exit', () => lost());
    w.unref();
    if (config) w.postMessage({ kind: 'gauge.configure', ...config } satisfies GaugeRequest);
    return w;
  }

  // Background messages do not restart a worker that just stopped (no crash loop on every traffic batch);
  // an explicit refresh does. What they carried is not lost: the worker rereads setup and gets the settings.
  // While Gauge is off and no worker runs, a message waits for none: the worker reads the setup and gets the
  // settings when it starts.
  const post = (m: GaugeRequest) => {
    if (closed || (worker === null && Date.now() - lostAt < respawnQuietMs)) return;
    if (worker === null && config?.enabled !== true) return;
    (worker ??= spawn()).postMessage(m);
  };

  function call<R extends GaugeReply>(make: (id: number) => GaugeRequest): Promise<R> {
    if (closed) return Promise.reject(new ServiceError('INTERNAL', 'The gauge worker is stopping.'));
    const w = (worker ??= spawn());
    const id = nextId++;
    return new Promise<R>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (m: GaugeReply) => void, reject });
      w.ref();
      w.postMessage(make(id));
    });
  }

  const traffic = trafficBatch(post, options.trafficEveryMs ?? 3_000);

  let idleTimer: NodeJS.Timeout | null = idleStart(options.idleStartMs ?? IDLE_START_MS, () => {
    idleTimer = null;
    if (!closed && worker === null) worker = spawn();
  });

  return {
    configure(enabled, retentionDays) {
      config = { enabled, retentionDays };
      // A worker that starts now is configured by spawn().
      if (enabled && worker === null && !closed && Date.now() - lostAt >= respawnQuietMs) worker = spawn();
      else post({ kind: 'gauge.configure', enabled, retentionDays });
    },
    setupChanged: () => post({ kind: 'gauge.setup' }),
    async refresh(sourceIds) {
      if (inRefresh) throw new ServiceError('CONFLICT', 'A Gauge refresh is already running; wait for it to finish.');
      inRefresh = true;
      try {
        return (await call<Refreshed>((id) => ({ kind: 'gauge.refresh', id, sourceIds }))).outcomes;
      } finally {
        inRefresh = false;
      }
    },
    refreshing: () => inRefresh,
    traffic() {
      if (closed || config?.enabled !== true) return;
      traffic.call();
    },
    observe(providerRecordId, providerKind, h) {
      if (closed || config?.enabled !== true) return;
      const providerId = HEADER_PROVIDERS[providerKind];
      const fields = providerId === undefined ? null : liveHeaderFields(h);
      if (fields !== null) traffic.headers({ providerRecordId, providerId: providerId!, at: Date.now(), fields });
    },
    async prune() {
      return (await call<Extract<GaugeReply, { kind: 'gauge.pruned' }>>((id) => ({ kind: 'gauge.prune', id }))).removed;
    },
    async close() {
      if (closed) return;
      if (respawnTimer !== null) clearTimeout(respawnTimer);
      if (idleTimer !== null) clearTimeout(idleTimer);
      traffic.flush();
      const w = worker;
      if (w === null) {
        closed = true;
        return;
      }
      try {
        await closedWithin(
          call((id) => ({ kind: 'gauge.close', id })),
          log,
        );
      } finally {
        closed = true;
        await w.terminate();
      }
    },
  };
}

/**
 * Overrides from the environment, read once at start: SWITCHYARD_GAUGE_ALLOWED_HOSTS=loopback keeps every
 * source on 127.0.0.1/localhost (the test suites set it, so no test can reach a public status page), and
 * SWITCHYARD_GAUGE_TIMEOUT_MS bounds each source's run.
 */
export function gaugeOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<Omit<GaugeWorkerData, 'dataDir'>> {
  const out: Partial<Omit<GaugeWorkerData, 'dataDir'>> = {};
  if (env.SWITCHYARD_GAUGE_ALLOWED_HOSTS === 'loopback') out.allowedHosts = 'loopback';
  const timeout = Number(env.SWITCHYARD_GAUGE_TIMEOUT_MS);
  if (Number.isInteger(timeout) && timeout >= 100 && timeout <= 300_000) out.timeoutMs = timeout;
  return out;
}
