import type { ServiceError } from '../protocol/errors.ts';
import type { UsageReport } from '../protocol/gateway.ts';
import type { Chunk, RelayEnd, RelayRequest } from '../protocol/relay.ts';
import type { RelayHandle, RelayPool, RelaySink } from '../workers/shared/relay-sink.ts';
import {
  MAX_SERIES,
  OTHER,
  type CounterChild,
  type GaugeChild,
  type HistogramChild,
  type Metric,
  type Registry,
} from './registry.ts';
import { DURATION_BUCKETS } from './traffic.ts';

// Upstream timing per provider, heard where every relayed call passes: the relay pool. The pool is wrapped,
// not changed: each call's sink is wrapped in one small object that notes the first answer message (time to
// first byte, as the edge sees it) and the last (the call's duration), and counts calls in flight per pool.

interface ProviderSeries {
  /** The provider's ID, or `other` once MAX_SERIES providers have series. */
  label: string;
  ttfb: HistogramChild;
  duration: HistogramChild;
  errors: Map<string, CounterChild>;
}

export function createRelayMetrics(registry: Registry) {
  const ttfb = registry.histogram(
    'switchyard_upstream_ttfb_seconds',
    "Time from a relayed call's start to its upstream answer head (a buffered answer: the whole answer), by provider.",
    ['provider'],
    DURATION_BUCKETS,
  );
  const duration = registry.histogram(
    'switchyard_upstream_duration_seconds',
    "Time from a relayed call's start to its end, however it ended, by provider.",
    ['provider'],
    DURATION_BUCKETS,
  );
  const errors = registry.counter(
    'switchyard_upstream_errors_total',
    'Relayed calls that ended in an error, by provider and error code.',
    ['provider', 'code'],
  );
  const inflight = registry.gauge(
    'switchyard_relay_inflight_calls',
    'Gateway calls in flight, by pool (relay: the proxy workers; runtime: the embedded runtime).',
    ['pool'],
  );
  const pools = { relay: inflight.labels('relay'), runtime: inflight.labels('runtime') };
  const providers = new Map<string, ProviderSeries>();

  function seriesOf(id: string): ProviderSeries {
    let s = providers.get(id);
    if (s === undefined) {
      const label = providers.size >= MAX_SERIES ? OTHER : id;
      s = providers.get(label) ?? {
        label,
        ttfb: ttfb.labels(label),
        duration: duration.labels(label),
        errors: new Map(),
      };
      providers.set(label, s);
    }
    return s;
  }

  /** `pool` with every call measured. */
  function tap(pool: RelayPool): RelayPool {
    return {
      ...(pool.arena && { arena: pool.arena }),
      start(req: RelayRequest, sink: RelaySink): RelayHandle {
        const metered = new MeteredSink(
          sink,
          seriesOf(req.target.id),
          req.target.kind === 'embedded' ? pools.runtime : pools.relay,
          errors,
        );
        return pool.start(req, metered);
      },
      close: () => pool.close(),
    };
  }

  return { tap };
}

/** A class, not a literal of closures: one allocation per call (bench/PROFILE.md counts them). */
class MeteredSink implements RelaySink {
  private readonly started = performance.now();
  private headSeen = false;
  private over = false;

  constructor(
    private readonly inner: RelaySink,
    private readonly series: ProviderSeries,
    private readonly inflight: GaugeChild,
    private readonly errorsMetric: Metric<CounterChild>,
  ) {
    inflight.inc();
  }

  private head_(): void {
    if (this.headSeen) return;
    this.headSeen = true;
    this.series.ttfb.observe((performance.now() - this.started) / 1000);
  }

  private end_(code: string | null): void {
    if (this.over) return;
    this.over = true;
    this.inflight.inc(-1);
    this.series.duration.observe((performance.now() - this.started) / 1000);
    if (code === null) return;
    let counter = this.series.errors.get(code);
    if (counter === undefined) {
      this.series.errors.set(code, (counter = this.errorsMetric.labels(this.series.label, code)));
    }
    counter.inc();
  }

  whole(status: number, headers: Record<string, string>, body: ArrayBuffer | string, end: RelayEnd): void {
    this.head_();
    this.end_(null);
    this.inner.whole(status, headers, body, end);
  }
  head(status: number, headers: Record<string, string>): void {
    this.head_();
    this.inner.head(status, headers);
  }
  data(chunks: Chunk[], closing?: boolean): void {
    this.inner.data(chunks, closing);
  }
  end(end: RelayEnd, chunks?: Chunk[]): void {
    this.end_(null);
    this.inner.end(end, chunks);
  }
  error(error: ServiceError, usage: UsageReport | null): void {
    this.end_(error.code);
    this.inner.error(error, usage);
  }
  aborted(usage: UsageReport | null): void {
    this.end_(null);
    this.inner.aborted(usage);
  }
  ack(bytes: number): void {
    this.inner.ack?.(bytes);
  }
  created(responseId: string): void {
    this.inner.created?.(responseId);
  }
}
