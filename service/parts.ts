import type { Logger } from 'pino';
import type { CatalogService } from '../control/catalog-service.ts';
import type { GaugeCapacitySignal } from '../control/gauge/capacity-signal.ts';
import type { ServiceActivity } from '../control/gauge/service-activity.ts';
import type { LocalRuntime } from '../control/local-runtime.ts';
import type { KeyPool } from '../edge/gateway/key-pool.ts';
import type { EdgeName } from '../edge/http/choose-edge.ts';
import type { CorsPolicy } from '../edge/http/cors.ts';
import type { LogTail } from '../edge/http/log-tail.ts';
import type { MetricSnapshot } from '../metrics/registry.ts';
import type { createRelayPool } from '../workers/proxy/relay-pool.ts';
import type { ProxyPool } from '../workers/proxy/task-pool.ts';
import type { ControlChannel } from './control-channel.ts';
import type { createSmartRouting } from './smart-routing.ts';

// What the families share. Each family (service/families/*.ts) takes the parts of the families started before
// it and returns its own; compose.ts hands them on in start order, so a family that reads a part of a later one
// does not compile. What the root gives every family is `Base`; the few parts read from a family started later
// are the `LateParts` below, each read through its holder.

/** What the composition root gives every family: its options, and its own state read at call time. */
export interface Base {
  dataDir: string;
  log: Logger;
  logTail: LogTail;
  edge: EdgeName;
  /** How the routes reach the control plane's ports (control-channel.ts). */
  control: ControlChannel;
  /** The clock limits' windows read (a test's own clock in process); Date.now otherwise. */
  now: () => number;
  /** The listener's port once bound (port 0 picks one then): providers and services must not point at it. */
  boundPort(): number | null;
  /** True from the start of shutdown. */
  isDraining(): boolean;
  /** The metrics of the edge threads beside this one (service/edge-threads.ts); none with one edge thread. */
  edgeThreadMetrics(): Promise<MetricSnapshot[][]>;
}

/** A part that a family started earlier reads: bound once, by the family that builds it, as soon as it is built. */
export interface Late<T> {
  /** The part; throws while it is not bound yet. */
  get(): T;
  /** Returns `value`, so that the builder binds it where it builds it. */
  bind(value: T): T;
}

/**
 * The parts read by a family started before the one that builds them, each only in a callback that runs after
 * the builder bound it (a route, a scrape, a timer, a call). A family names those it reads or binds in its
 * signature: `Pick<LateParts, ...>`.
 */
export interface LateParts {
  /** Providers: the usage family's prices and metrics, Gauge's insight routes. */
  catalog: Late<CatalogService>;
  /** Providers: the usage family's metrics. */
  pool: Late<ProxyPool>;
  /** Providers: the usage family's metrics (each key's state). */
  keyPool: Late<KeyPool>;
  /** Runtime, before it starts: the providers' embedded lister (its first start creates that provider). */
  local: Late<LocalRuntime>;
  /** Gateway: the usage family's metrics. */
  relayPool: Late<ReturnType<typeof createRelayPool>>;
  /** Gateway: the providers' model routes, the limits' check that a route pack exists. */
  smartRoute: Late<ReturnType<typeof createSmartRouting>>;
  /** Gateway: Smart Route's capacity strategy and GET /v1/gauge/capacity read one signal. */
  gaugeCapacity: Late<GaugeCapacitySignal>;
  /** Usage: Gauge's insight routes flush the `service` source's activity. */
  serviceActivity: Late<ServiceActivity>;
}

export function lateParts(): LateParts {
  return {
    catalog: late('catalog'),
    pool: late('pool'),
    keyPool: late('keyPool'),
    local: late('local'),
    relayPool: late('relayPool'),
    smartRoute: late('smartRoute'),
    gaugeCapacity: late('gaugeCapacity'),
    serviceActivity: late('serviceActivity'),
  };
}

function late<T>(name: string): Late<T> {
  let bound: { value: T } | null = null;
  return {
    get() {
      if (bound === null) throw new Error(`${name} is read before the family that builds it has built it`);
      return bound.value;
    },
    bind(value) {
      if (bound !== null) throw new Error(`${name} is bound twice`);
      bound = { value };
      return value;
    },
  };
}

/** What the edge reads on each request and a settings change replaces. */
export interface EdgeConfig {
  cors: CorsPolicy;
  jsonBodyLimit: number;
  multipartBodyLimit: number;
  bodyBudgetLimit: number;
}
