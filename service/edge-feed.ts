import type { JournalMark } from '../store/usage-journal.ts';
import type { RequestLogSettings } from '../store/request-log-repo.ts';
import type { MetricSnapshot } from '../metrics/registry.ts';
import type { AuthChange } from '../state/auth-table.ts';
import type { CatalogChange } from '../state/catalog-index.ts';
import type { RouteShape } from '../protocol/forward.ts';
import type { UsageEvent } from '../protocol/gateway.ts';
import { methodsOf } from '../protocol/ports/methods.ts';
import type { ModelPricing } from '../protocol/http/catalog.ts';
import type { ActiveLimit } from '../protocol/ports/limits.ts';

// What passes between the control thread and an edge thread (edge-threads.ts, edge-worker.ts) besides
// forwarded requests and embedded-runtime calls. The control thread calls the edge thread's feed (its copies
// of the auth table, the catalog, the settings), and each call's answer is the thread's acknowledgement. The
// edge thread posts its reports one way on the same port, in one batch per event-loop turn.

/** The settings an edge thread reads per request. */
export interface EdgeSettings {
  allowedOrigins: string[];
  jsonBodyBytes: number;
  multipartBodyBytes: number;
  /** This thread's share of the request-body bytes held at once. */
  bodyBudgetBytes: number;
  /** The order in which a plain model name is tried against providers (edge/gateway/plain-names.ts). */
  providerOrder: string[];
  /** How long a session keeps its provider key without a call, in ms (edge/gateway/key-pool.ts). */
  sessionIdleMs: number;
  /** `usage.enabled`: a thread journals usage only while it is on. */
  usageEnabled: boolean;
  /** The request log's setting: the thread captures and writes its own calls' entries (docs/api.md, Request log). */
  requestLog: RequestLogSettings;
}

/** Gauge's reading of a window, as a gate reads it. */
export type GaugeShare = { percent: number; resetsAt: number | null };

/** What admission reads on an edge thread, sent by the control thread whenever any of it changes. */
export interface EdgeAdmission {
  limits: readonly ActiveLimit[];
  /**
   * While the loop brake is on (or a session is paused) the thread hands its gateway calls over whole; also
   * while limits are on under a clock of a test's own (the windows are the main thread's to read).
   */
  handOver: boolean;
  /** Each catalog model's USD price, while a `usd` limit is enabled (empty otherwise). */
  prices: [string, ModelPricing][];
  /** The readings of the Gauge windows that an enabled gate reads, by `accountId` NUL `windowId`. */
  gauge: [string, GaugeShare | null][];
}

/** The key of a Gauge window's reading in EdgeAdmission's `gauge`. */
export const shareKey = (accountId: string, windowId: string) => `${accountId}\u0000${windowId}`;

export interface EdgeFeedPort {
  auth(change: AuthChange): void;
  catalog(change: CatalogChange): void;
  settings(next: EdgeSettings): void;
  /** What the thread's admission reads besides the shared ledger (edge-admission.ts). */
  admission(next: EdgeAdmission): void;
  /** Starts accepting connections, once the copies above hold the control thread's state. */
  listen(): Promise<void>;
  /** Stops accepting; settles once no request is in flight, or after `drainMs`. */
  drain(drainMs: number): Promise<void>;
  /** Stops the thread's relay workers and store; its last reports are posted before this settles. */
  close(): Promise<void>;
  metrics(): MetricSnapshot[];
}

/** The feed as the control thread calls it: every method answers a promise, the thread's acknowledgement. */
export type RemoteFeed = {
  [K in keyof EdgeFeedPort]: (...args: Parameters<EdgeFeedPort[K]>) => Promise<Awaited<ReturnType<EdgeFeedPort[K]>>>;
};

export const EDGE_FEED_METHODS = methodsOf<EdgeFeedPort>()([
  'auth',
  'catalog',
  'settings',
  'admission',
  'listen',
  'drain',
  'close',
  'metrics',
]);

/** One way, edge thread to control thread. */
export type EdgeReport =
  /** `mark`: where the thread journaled it (null: its journal is off). */
  | { t: 'usage'; event: UsageEvent; mark: JournalMark | null }
  | { t: 'log'; line: string }
  /** Tokens this thread authenticated, with when (state/auth-table.ts `takeUses`). */
  | { t: 'uses'; uses: [string, number][] }
  | { t: 'headers'; modelId: string; headers: Record<string, string> }
  | { t: 'rateLimited'; modelId: string; retryAfterSeconds: number | null }
  | { t: 'latency'; modelId: string; ms: number }
  /** A slot of the limits' ledger this thread claimed, with its name (control/limit-counters.ts). */
  | { t: 'claim'; slot: number; limitId: string; scopeKey: string }
  /** A call this thread refused under a limit's counter (its window's announcement is the control thread's). */
  | { t: 'tripped'; limitId: string; key: string; windowStart: number; resetsAt: number };

/** What an edge thread starts with. The MessagePorts travel beside it, in the transfer list. */
export interface EdgeWorkerData {
  index: number;
  dataDir: string;
  host: string;
  port: number;
  networkExposed: boolean;
  logLevel: string;
  /** The control thread's routes the edge thread forwards (every route but the gateway's). */
  shapes: RouteShape[];
  relayThreads: number;
  /** The keys' live headroom and the sessions, one table for every thread (state/key-pool-table.ts). */
  keyPool: SharedArrayBuffer;
  /** The response routes being written on any thread (state/route-writes.ts). */
  routeWrites: SharedArrayBuffer;
  /** The limits' ledger and its gate, one for every thread (state/limit-ledger.ts, state/limit-gate.ts). */
  limitLedger: SharedArrayBuffer;
  limitGate: SharedArrayBuffer;
  /** The run ID of the usage journal's files (store/usage-journal.ts). */
  usageRun: string;
  ports: {
    feed: MessagePort;
    calls: MessagePort;
    forward: MessagePort;
    runtime: MessagePort;
  };
}

type MessagePort = import('node:worker_threads').MessagePort;
