import type { JournalMark } from '../store/usage-journal.ts';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { EdgeAdmission } from './edge-feed.ts';
import type { MetricSnapshot } from '../metrics/registry.ts';
import { routeShapes, serveForwarded } from '../edge/http/forward-serve.ts';
import { UWS_IDLE_CLOSE_MS } from '../edge/http/open-connections.ts';
import type { RouteDef } from '../edge/http/router.ts';
import type { AuthChange } from '../state/auth-table.ts';
import type { CatalogChange } from '../state/catalog-index.ts';
import type { Follower } from '../state/followers.ts';
import type { RouteShape, ToControl } from '../protocol/forward.ts';
import type { StoredSettings } from '../protocol/http/settings.ts';
import type { SmartRoutingPort } from '../protocol/ports/smart-route.ts';
import { EDGE_PROVIDERS_METHODS, type EdgeProvidersPort } from '../protocol/ports/providers.ts';
import type { RelayPool } from '../workers/shared/relay-sink.ts';
import { portClient, servePorts } from '../workers/shared/port-channel.ts';
import { serveRelayPool } from '../workers/shared/relay-over-port.ts';
import {
  EDGE_FEED_METHODS,
  type RemoteFeed,
  type EdgeReport,
  type EdgeSettings,
  type EdgeWorkerData,
} from './edge-feed.ts';

// The edge threads beside the main one (docs/api.md, "Edge threads"; SWITCHYARD_EDGE_THREADS). The main thread
// keeps the control plane and is edge thread 0; each other one (edge-worker.ts) listens on the same port and
// follows the control plane's state through its feed. A write that changes what the hot path reads answers only
// once every edge thread has acknowledged it, or after ACK_WAIT_MS for a thread that does not answer.

/** How long a write waits for one edge thread's acknowledgement before it answers anyway. */
export const ACK_WAIT_MS = 5000;
/** How long a starting edge thread may take to load, copy the state and listen. */
const START_MS = 60_000;

export interface EdgeThreadsDeps {
  /** Edge threads to start beside the main one. */
  count: number;
  dataDir: string;
  host: string;
  port: number;
  networkExposed: boolean;
  logLevel: string;
  log: Logger;
  /** The main thread's routes: an edge thread forwards those it does not serve, and gateway calls it hands over. */
  routes: readonly RouteDef[];
  /** The routes an edge thread serves itself (`METHOD /pattern`): the gateway's. */
  served: ReadonlySet<string>;
  relayThreads: number;
  /** The key pool's shared table (state/key-pool-table.ts). */
  keyPool: SharedArrayBuffer;
  /** The response routes being written (state/route-writes.ts). */
  routeWrites: SharedArrayBuffer;
  /** The run ID of the usage journal's files (store/usage-journal.ts). */
  usageRun: string;
  followAuth(follower: Follower<AuthChange>): () => void;
  followCatalog(follower: Follower<CatalogChange>): () => void;
  followSettings(follower: Follower<StoredSettings>): () => void;
  /** What admission reads on an edge thread besides the shared ledger (edge-admission.ts). */
  followAdmission(follower: Follower<EdgeAdmission>): () => void;
  /** The limits' ledger and its gate (control/limit-counters.ts). */
  limitLedger: SharedArrayBuffer;
  limitGate: SharedArrayBuffer;
  /** An edge thread's report of a ledger slot it claimed. */
  heardClaim(slot: number, limitId: string, scopeKey: string): void;
  /** An edge thread's report of a call it refused under a limit's counter. */
  tripped(limitId: string, key: string, windowStart: number, resetsAt: number): void;
  /** What an edge thread's settings copy holds, from the stored settings. */
  edgeSettings(settings: StoredSettings): EdgeSettings;
  smart: SmartRoutingPort;
  /** What an edge thread reports to the providers: a key the upstream refused. */
  providers: EdgeProvidersPort;
  runtime: RelayPool;
  /** A gateway call's usage, from an edge thread that has counted its metrics. */
  recordUsage(event: Extract<EdgeReport, { t: 'usage' }>['event'], mark: JournalMark | null): void;
  noteUses(uses: [string, number][]): void;
  /** Where an edge thread's log lines are written: the main logger's destination. */
  writeLine(line: string): void;
}

export interface EdgeThreads {
  metrics(): Promise<MetricSnapshot[][]>;
  /** Stops every thread's listener; settles once their requests are answered, or after `drainMs`. */
  drain(drainMs: number): Promise<void>;
  close(): Promise<void>;
}

interface Thread {
  worker: Worker;
  feed: RemoteFeed;
  close(): void;
}

export async function startEdgeThreads(deps: EdgeThreadsDeps): Promise<EdgeThreads> {
  const threads: Thread[] = [];
  // The same for every thread: the main thread's routes it forwards.
  const shapes = routeShapes(deps.routes.filter((r) => !deps.served.has(`${r.method} ${r.path}`)));
  try {
    for (let i = 1; i <= deps.count; i++) threads.push(await startThread(deps, i, shapes));
  } catch (err) {
    await Promise.all(threads.map((t) => stopThread(t)));
    throw err;
  }
  return {
    async metrics() {
      const all = await Promise.all(threads.map((t) => bounded(t.feed.metrics(), ACK_WAIT_MS).catch(() => null)));
      return all.filter((m): m is MetricSnapshot[] => Array.isArray(m));
    },
    async drain(drainMs) {
      await Promise.all(threads.map((t) => bounded(t.feed.drain(drainMs), drainMs + ACK_WAIT_MS).catch(() => null)));
    },
    async close() {
      await Promise.all(threads.map((t) => stopThread(t)));
    },
  };
}

async function stopThread(thread: Thread): Promise<void> {
  // The thread waits for its idle connections to close before it may stop (edge/http/open-connections.ts).
  await bounded(thread.feed.close(), UWS_IDLE_CLOSE_MS + ACK_WAIT_MS).catch(() => null);
  thread.close();
  await thread.worker.terminate();
}

/** `promise`, or a rejection after `ms`. */
function bounded<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function startThread(deps: EdgeThreadsDeps, index: number, shapes: RouteShape[]): Promise<Thread> {
  const { log } = deps;
  const [feed, calls, forward, runtime] = [1, 2, 3, 4].map(() => new MessageChannel());
  const data: EdgeWorkerData = {
    index,
    dataDir: deps.dataDir,
    host: deps.host,
    port: deps.port,
    networkExposed: deps.networkExposed,
    logLevel: deps.logLevel,
    shapes,
    relayThreads: deps.relayThreads,
    keyPool: deps.keyPool,
    routeWrites: deps.routeWrites,
    limitLedger: deps.limitLedger,
    limitGate: deps.limitGate,
    usageRun: deps.usageRun,
    ports: {
      feed: feed!.port2,
      calls: calls!.port2,
      forward: forward!.port2,
      runtime: runtime!.port2,
    },
  };
  const worker = new Worker(new URL('./edge-entry.js', import.meta.url), {
    workerData: data,
    transferList: Object.values(data.ports),
  });
  const client = portClient(feed!.port1);
  const remote = client.remote<RemoteFeed>('feed', EDGE_FEED_METHODS);
  const served = servePorts(calls!.port1, {
    'smart.presets': { target: deps.smart.presets, methods: ['usable'] },
    'smart.packs': { target: deps.smart.packs, methods: ['usable', 'decide'] },
    providers: { target: deps.providers, methods: EDGE_PROVIDERS_METHODS },
  });
  const forwarding = serveForwarded(deps.routes, (m, transfer) => forward!.port1.postMessage(m, transfer ?? []));
  forward!.port1.on('message', (m: ToControl) => forwarding.take(m));
  const relay = serveRelayPool(runtime!.port1, deps.runtime);
  // The thread's reports come on the feed's port (the answers to its calls are objects, a batch is an array).
  feed!.port1.on('message', (batch: unknown) => {
    if (Array.isArray(batch)) for (const r of batch as EdgeReport[]) report(deps, r);
  });
  feed!.port1.unref();
  forward!.port1.unref();

  // A change waits for this thread's acknowledgement, at most ACK_WAIT_MS: a stuck thread is logged, not waited on.
  const acked = (what: string, ack: Promise<unknown>) =>
    bounded(ack, ACK_WAIT_MS).catch((err: unknown) =>
      log.warn({ edgeThread: index, change: what, err: String(err) }, 'an edge thread did not acknowledge a change'),
    );
  const unfollow = [
    deps.followAuth((change) => acked('auth', remote.auth(change))),
    deps.followCatalog((change) => acked('catalog', remote.catalog(change))),
    deps.followSettings((next) => acked('settings', remote.settings(deps.edgeSettings(next)))),
    deps.followAdmission((next) => acked('limits', remote.admission(next))),
  ];
  let stopping = false;
  const thread: Thread = {
    worker,
    feed: remote,
    close() {
      if (stopping) return;
      stopping = true;
      for (const off of unfollow) off();
      forwarding.close();
      relay.close();
      served.close();
      client.close();
      forward!.port1.close();
    },
  };
  const failed = new Promise<never>((_, reject) => {
    worker.once('error', (err) => reject(err));
    worker.once('exit', (code) => reject(new Error(`edge thread ${index} exited with code ${code} while starting`)));
  });
  try {
    await bounded(Promise.race([remote.listen(), failed]), START_MS);
  } catch (err) {
    thread.close();
    await worker.terminate();
    throw err;
  }
  worker.on('error', (err) => log.error({ edgeThread: index, err: String(err) }, 'an edge thread failed'));
  // A thread that ended on its own is no longer waited on: the writes after it answer at once.
  worker.on('exit', (code) => {
    if (stopping) return;
    log.error({ edgeThread: index, code }, 'an edge thread exited');
    thread.close();
  });
  // The service's own listener holds the process open; a thread left behind by a failed close must not.
  worker.unref();
  return thread;
}

function report(deps: EdgeThreadsDeps, r: EdgeReport): void {
  switch (r.t) {
    case 'usage':
      deps.recordUsage(r.event, r.mark);
      return;
    case 'log':
      deps.writeLine(r.line);
      return;
    case 'uses':
      deps.noteUses(r.uses);
      return;
    case 'headers':
      deps.smart.capacity.observeHeaders(r.modelId, r.headers);
      return;
    case 'rateLimited':
      deps.smart.capacity.observeRateLimited(r.modelId, r.retryAfterSeconds);
      return;
    case 'latency':
      deps.smart.latency.observe(r.modelId, r.ms);
      return;
    case 'claim':
      deps.heardClaim(r.slot, r.limitId, r.scopeKey);
      return;
    case 'tripped':
      deps.tripped(r.limitId, r.key, r.windowStart, r.resetsAt);
  }
}
