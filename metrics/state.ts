import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Registry } from './registry.ts';

// Metrics read from current state at each scrape rather than counted as things happen: the process, the
// worker pools' queues, the meter's backlog and Gauge's sources. Nothing here runs on a request.

/** A piscina pool's figures (workers/proxy/task-pool.ts). */
export interface TaskPoolStats {
  queued: number;
  threads: number;
  /** Share of the pool's capacity used since it started, 0 to 1. */
  utilization: number;
}

export interface StateSources {
  version: string;
  edge: string;
  proxyPool(): TaskPoolStats;
  /** Records accepted by the meter and not yet folded; refused records. */
  meter(): { inflight: number; dropped: number };
  /** Slots of the shared body arena in use. */
  arenaInUse(): number;
  /** Gauge's sources with their kind, whether enabled, and their last collection's outcome (null: never ran). */
  gaugeSources(): Iterable<{ kind: string; enabled: boolean; lastOutcome: string | null; consecutiveFailures: number }>;
}

// The lag histogram is reset this often, so its figures describe the last minute or so, not the whole run.
const LAG_WINDOW_MS = 60_000;

// The state metrics: each read from its source at a scrape.
export function createStateMetrics(registry: Registry, src: StateSources) {
  const info = registry.gauge(
    'switchyard_info',
    'Always 1: the running version and HTTP server (uWebSockets.js or node:http, as in /health).',
    ['version', 'edge'],
  );
  info.labels(src.version, src.edge).set(1);
  const started = registry.gauge(
    'switchyard_process_start_time_seconds',
    'When this process started, in seconds since the epoch.',
  );
  started.labels().set(Math.round(Date.now() / 1000 - process.uptime()));
  const memory = registry.gauge(
    'switchyard_process_memory_bytes',
    'Memory of the service process by kind (rss, heap_used, heap_total, external).',
    ['kind'],
  );
  const lag = registry.gauge(
    'switchyard_event_loop_lag_seconds',
    'Event-loop delay of the edge thread over the last minute or so, by statistic (mean, p50, p99, max).',
    ['stat'],
    // Of several edge threads, the worst: a sum of delays is no delay anyone saw.
    'max',
  );
  const queue = registry.gauge(
    'switchyard_worker_queue_depth',
    'Work waiting for a worker, by pool (proxy: model lists; meter: usage records not yet folded).',
    ['pool'],
  );
  const threads = registry.gauge('switchyard_worker_threads', 'Threads of a task pool now.', ['pool']);
  const utilization = registry.gauge(
    'switchyard_worker_utilization_ratio',
    'Share of a task pool capacity used since start (0 to 1).',
    ['pool'],
  );
  const dropped = registry.counter(
    'switchyard_meter_dropped_records_total',
    'Usage records the meter refused because it was full or down.',
  );
  const arena = registry.gauge(
    'switchyard_body_arena_slots_in_use',
    'Request-body slots of the shared body arena held by requests or relay workers.',
  );
  const sources = registry.gauge(
    'switchyard_gauge_sources',
    "Gauge sources by kind, enabled state and last collection's outcome (never: not collected yet).",
    ['kind', 'enabled', 'last_outcome'],
  );
  const failures = registry.gauge(
    'switchyard_gauge_consecutive_failures',
    'Consecutive failed collections summed over the sources of a kind.',
    ['kind'],
  );

  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const resetTimer = setInterval(() => delay.reset(), LAG_WINDOW_MS);
  resetTimer.unref();

  registry.onCollect(() => {
    const m = process.memoryUsage();
    memory.labels('rss').set(m.rss);
    memory.labels('heap_used').set(m.heapUsed);
    memory.labels('heap_total').set(m.heapTotal);
    memory.labels('external').set(m.external);
    // The histogram holds nanoseconds; before its first sample its mean is NaN and its min a huge number.
    const seconds = (ns: number) => (delay.count === 0 || !Number.isFinite(ns) ? 0 : ns / 1e9);
    lag.labels('mean').set(seconds(delay.mean));
    lag.labels('p50').set(seconds(delay.percentile(50)));
    lag.labels('p99').set(seconds(delay.percentile(99)));
    lag.labels('max').set(seconds(delay.max));

    const proxy = src.proxyPool();
    queue.labels('proxy').set(proxy.queued);
    threads.labels('proxy').set(proxy.threads);
    utilization.labels('proxy').set(proxy.utilization);
    const meter = src.meter();
    queue.labels('meter').set(meter.inflight);
    dropped.labels().value = meter.dropped;
    arena.labels().set(src.arenaInUse());

    // Rebuilt from the stored state each time: a deleted source's series goes away with it.
    sources.reset();
    failures.reset();
    for (const s of src.gaugeSources()) {
      sources.labels(s.kind, String(s.enabled), s.lastOutcome ?? 'never').inc();
      failures.labels(s.kind).inc(s.consecutiveFailures);
    }
  });

  return {
    close(): void {
      clearInterval(resetTimer);
      delay.disable();
    },
  };
}
