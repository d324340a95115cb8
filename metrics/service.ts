import { createCredentialMetrics, type CredentialState } from './credentials.ts';
import type { UsageEvent } from '../protocol/gateway.ts';
import { createRegistry, type MetricSnapshot } from './registry.ts';
import { createRelayMetrics } from './relay-tap.ts';
import { createSchedulerMetrics } from './scheduler.ts';
import { createStateMetrics, type StateSources } from './state.ts';
import { createTrafficMetrics } from './traffic.ts';

// GET /metrics's one registry: traffic counted as it happens (the app's answers, the gateway's usage events,
// the relay's timings) and state read at each scrape. docs/api.md (Metrics) lists every metric and label.

export function createServiceMetrics(state: StateSources & { credentials(): Iterable<CredentialState> }) {
  const registry = createRegistry();
  const traffic = createTrafficMetrics(registry);
  const relay = createRelayMetrics(registry);
  const stateMetrics = createStateMetrics(registry, state);
  const credentials = createCredentialMetrics(registry, () => state.credentials());
  const refusals = registry.counter(
    'switchyard_limit_refusals_total',
    "Gateway calls refused by an enforced limit, by the limit's metric (docs/api.md, Limits).",
    ['metric'],
  );
  const scheduler = createSchedulerMetrics(registry);
  return {
    /** The local-model scheduler's loads, evictions, queue waits and memory. */
    scheduler,
    /** For createApp: each answer's route, status and duration, and each error's code. */
    observer: traffic.observer,
    /** For the gateway's usage events. */
    usage(event: UsageEvent): void {
      traffic.usage(event);
      credentials.usage(event);
    },
    /** A call refused by a limit of this metric (a fixed set: requests, tokens, usd). */
    limitRefused: (metric: string) => refusals.labels(metric).inc(),
    /** Wraps the relay pool the gateway uses. */
    tapRelay: relay.tap,
    /** With `others`, other threads' snapshots (their `snapshot()`), merged series by series. */
    render: (others?: readonly MetricSnapshot[][]) => registry.render(others),
    close: () => stateMetrics.close(),
  };
}

export type ServiceMetrics = ReturnType<typeof createServiceMetrics>;
