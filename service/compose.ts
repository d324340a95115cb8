import type { Logger } from 'pino';
import { createApp } from '../edge/http/app.ts';
import { responsesSocketRoute } from '../edge/gateway/responses-socket.ts';
import { createBodyBudget } from '../edge/http/body-budget.ts';
import { chooseEdge, type EdgeMode } from '../edge/http/choose-edge.ts';
import { createLogTail, type LogTail } from '../edge/http/log-tail.ts';
import { lineWriter } from '../edge/http/log.ts';
import { GATEWAY_OPS } from '../protocol/gateway.ts';
import { startEdgeThreads, type EdgeThreads } from './edge-threads.ts';
import { followEdgeAdmission } from './edge-admission-feed.ts';
import { availableParallelism } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { drain, listen } from '../edge/http/server.ts';
import { capabilitiesRoute } from '../edge/routes/capabilities.ts';
import { openapiRoute } from '../edge/routes/openapi.ts';
import { createControlChannel } from './control-channel.ts';
import { recordInstance } from './data-dir.ts';
import { adminFamily } from './families/admin.ts';
import { eventsFamily, type EventsParts } from './families/events.ts';
import { gatewayFamily, type GatewayParts } from './families/gateway.ts';
import { gaugeFamily, type GaugeParts } from './families/gauge.ts';
import { limitsFamily, type LimitsParts } from './families/limits.ts';
import { providersFamily, type ProvidersParts } from './families/providers.ts';
import { requestLogFamily, type RequestLogParts } from './families/request-log.ts';
import { runtimeFamily, type RuntimeParts } from './families/runtime.ts';
import { settingsFamily, type SettingsParts } from './families/settings.ts';
import { storeFamily, type StoreParts } from './families/store.ts';
import { tokensFamily, type TokensParts } from './families/tokens.ts';
import { usageFamily, type UsageParts } from './families/usage.ts';
import { createFamilies, type Families } from './family.ts';
import { lateParts, type Base } from './parts.ts';
import type { RouteDef } from '../edge/http/router.ts';
import type { MetricSnapshot } from '../metrics/registry.ts';

// The composition root: starts the families (service/families/) in order, binds the listener, and knows how to
// stop. Each family is one part of the service with its routes and its close; the order is the one in which
// each family's last writes reach the families closed after it (the relay's usage reaches the meter, the meter's
// commits reach the store).

/** What the root gave the families and what they built: what it reads once they have all started. */
export type ServiceParts = Base &
  StoreParts &
  TokensParts &
  EventsParts &
  SettingsParts &
  GaugeParts &
  UsageParts &
  ProvidersParts &
  RuntimeParts &
  LimitsParts &
  RequestLogParts &
  GatewayParts;

export interface ServiceOptions {
  dataDir: string;
  port: number;
  log: Logger;
  /**
   * SWITCHYARD_EDGE: a native uWebSockets.js build that answers every request (`auto`, choose-edge.ts), node:http
   * (`node`), or any native build (`uws`).
   */
  edge?: EdgeMode;
  /** The newest lines `log` wrote, for GET /v1/logs (empty when the logger keeps none). */
  logTail?: LogTail;
  /**
   * For tests: runs before each family starts, with the parts of the families started before it; a throw fails
   * the start as the family's own would.
   */
  beforeFamily?: (name: string, started: Readonly<Partial<ServiceParts>>) => void | Promise<void>;
  /** For tests: the clock of enforced limits' windows. */
  now?: () => number;
  /** For tests: the routes reach the control plane's ports over a MessagePort (control-channel.ts). */
  controlChannel?: boolean;
  /**
   * SWITCHYARD_EDGE_THREADS: threads that accept connections and serve the gateway (edge-threads.ts); 1, the
   * main thread alone, by default. Several need the uWebSockets.js edge; node:http serves from one.
   */
  edgeThreads?: number;
}

export interface RunningService {
  port: number;
  host: string;
  tokenFile: string;
  /** Where the embedded runtime looks for GGUF files now (for the terminal, never a response). */
  modelsDirectory(): string;
  /** Set on the first start only: the secret of the new admin token, for the terminal, never the log. */
  bootstrapSecret: string | null;
  /** Stops accepting, waits up to `drainMs` for in-flight requests, then closes the store. */
  close(drainMs?: number): Promise<void>;
}

export async function startService({
  dataDir,
  port,
  log,
  edge: edgeMode = 'auto',
  logTail = createLogTail(),
  beforeFamily,
  now = Date.now,
  controlChannel = false,
  edgeThreads: threadsAsked = 1,
}: ServiceOptions): Promise<RunningService> {
  const { edge, uws, threads } = edgeOf(log, edgeMode, threadsAsked);
  const control = createControlChannel(controlChannel);
  // The root's own state, which the families read at call time (parts.ts, Base).
  let boundPort: number | null = null;
  let draining = false;
  let threadMetrics = async (): Promise<MetricSnapshot[][]> => [];
  const base: Base = {
    dataDir,
    log,
    logTail,
    edge,
    control,
    now,
    boundPort: () => boundPort,
    isDraining: () => draining,
    edgeThreadMetrics: () => threadMetrics(),
  };
  const families = createFamilies<ServiceParts>(log, beforeFamily);
  let p: ServiceParts;
  let listening: Awaited<ReturnType<typeof listen>> | undefined;
  let edgeThreads: EdgeThreads | null = null;
  try {
    p = await startFamilies(families, base, port);
    const routes = families.routes();
    routes.push(
      capabilitiesRoute(() => routes),
      openapiRoute(() => routes),
    );
    const config = p.edgeConfig;
    const app = createApp({
      routes,
      log,
      authenticate: (secret) => p.auth.authenticate(secret),
      cors: () => config.cors,
      jsonBodyLimit: () => config.jsonBodyLimit,
      multipartBodyLimit: () => config.multipartBodyLimit,
      listener: p.listener,
      isDraining: () => draining,
      observe: p.metrics.observer,
    });
    // uWS sets SO_REUSEPORT only on a port named: with several threads, port 0 becomes a free port first.
    const bound = threads > 1 && port === 0 ? await freePort(p.listener.host) : port;
    listening = await listen(uws, app, p.listener.host, bound, {
      arena: p.relayPool.arena,
      // Each edge thread holds its share of the bodies' bytes.
      bodyBudget: createBodyBudget(() => Math.floor(config.bodyBudgetLimit / threads)),
      shared: threads > 1,
      sockets: [
        responsesSocketRoute({
          app,
          maxMessageBytes: () => config.jsonBodyLimit,
          isDraining: () => draining,
        }),
      ],
    });
    if (threads > 1) {
      const started = await startThreads(p, routes, threads, listening.port);
      threadMetrics = () => started.metrics();
      edgeThreads = started;
    }
  } catch (err) {
    listening?.stopListening();
    await families.close();
    control.close();
    throw err;
  }
  const { listener } = p;
  listener.port = boundPort = listening!.port;
  log.info({ host: listener.host, port: listener.port, networkExposed: listener.networkExposed }, 'listening');
  // So that `switchyard token` finds this data directory without SWITCHYARD_HOME (bin/locate.js).
  const forgetInstance = recordInstance({ port: listener.port, dataDir });
  families.ready();

  async function close(drainMs = 10_000): Promise<void> {
    draining = true;
    families.drain();
    const [inflight] = await Promise.all([drain(listening!, drainMs), edgeThreads?.drain(drainMs)]);
    if (inflight > 0) log.warn({ inflight }, 'shutting down with requests still in flight');
    await families.cut();
    // A stopping edge thread waits until no connection of the process is open on the port, this thread's too
    // (open-connections.ts): the calls are over, so the idle ones are closed rather than waited for.
    if (edgeThreads !== null) listening!.closeConnections();
    await edgeThreads?.close();
    await families.close();
    control.close();
    forgetInstance();
    log.info('stopped');
  }

  let closing: Promise<void> | null = null;
  return {
    port: listener.port,
    host: listener.host,
    tokenFile: p.tokenFile,
    modelsDirectory: () => p.local.modelsDirectory(),
    bootstrapSecret: p.bootstrapSecret,
    close: (drainMs) => (closing ??= close(drainMs)),
  };
}

/** The families in start order, each on the parts of the families started before it. */
async function startFamilies(families: Families<ServiceParts>, base: Base, port: number): Promise<ServiceParts> {
  const late = lateParts();
  const store = await families.start('store', storeFamily, base);
  const tokens = await families.start('tokens', tokensFamily, store);
  const events = await families.start('events', eventsFamily, tokens);
  const settings = await families.start('settings', (p) => settingsFamily(p, port), events);
  const gauge = await families.start('gauge', (p) => gaugeFamily(p, late), settings);
  const usage = await families.start('usage', (p) => usageFamily(p, late), gauge);
  const providers = await families.start('providers', (p) => providersFamily(p, late), usage);
  const runtime = await families.start('runtime', (p) => runtimeFamily(p, late), providers);
  const limits = await families.start('limits', (p) => limitsFamily(p, late), runtime);
  const requestLog = await families.start('request-log', requestLogFamily, limits);
  const gateway = await families.start('gateway', (p) => gatewayFamily(p, late), requestLog);
  return families.start('admin', adminFamily, gateway);
}

/** The edge that serves here, and on how many threads, as the log says it. */
function edgeOf(log: Logger, edgeMode: EdgeMode, threadsAsked: number) {
  const { edge, uws, build, failures, passedOver } = chooseEdge(edgeMode);
  if (build !== undefined) log.info({ edge, build }, 'native uWebSockets.js binary loaded');
  else if (edgeMode === 'node') log.info({ edge }, 'serving HTTP with node:http (SWITCHYARD_EDGE=node)');
  else if (passedOver !== undefined)
    log.info(
      { edge, passedOver },
      'serving HTTP with node:http: the uWebSockets.js build that loads here leaves requests without Host or ' +
        'with folded header lines unanswered (SWITCHYARD_EDGE=uws runs it anyway; docs/api.md, HTTP at the edge)',
    );
  else
    log.warn(
      { edge, failures },
      'no native uWebSockets.js build loads here: serving HTTP with node:http instead (see README)',
    );
  // Several threads need uWS (node:http cannot share a port between threads here) and Linux, whose SO_REUSEPORT
  // spreads connections (elsewhere the last thread to listen would take them all).
  const threads = edge === 'uWebSockets.js' && process.platform === 'linux' ? threadsAsked : 1;
  if (threads !== threadsAsked)
    log.warn(
      { edge, edgeThreads: threadsAsked },
      'several edge threads need uWebSockets.js on Linux: serving from one',
    );
  return { edge, uws, threads };
}

/** Starts the edge threads beside this one on `port`, each following the control plane's state. */
function startThreads(
  p: ServiceParts,
  routes: readonly RouteDef[],
  threads: number,
  port: number,
): Promise<EdgeThreads> {
  const gateway = new Set(Object.values(GATEWAY_OPS).map((op) => `${op.method} ${op.path}`));
  return startEdgeThreads({
    count: threads - 1,
    dataDir: p.dataDir,
    host: p.listener.host,
    port,
    networkExposed: p.listener.networkExposed,
    logLevel: p.log.level,
    log: p.log,
    routes,
    served: gateway,
    relayThreads: Math.max(1, Math.ceil(availableParallelism() / threads)),
    keyPool: p.keyPoolBuffer,
    routeWrites: p.routeWrites,
    usageRun: p.usageRun,
    followAuth: (follower) => p.tokens.followAuth(follower),
    followCatalog: (follower) => p.catalog.follow(follower),
    followSettings: (follower) => p.followSettings(follower),
    followAdmission: (follower) =>
      followEdgeAdmission(
        {
          followAdmission: (f) => p.limits.followAdmission(f),
          catalog: p.catalog,
          priceOf: p.priceOf,
          gaugeShare: (accountId, windowId) => p.limits.admission.gaugeShare(accountId, windowId),
          testClock: p.now !== Date.now,
        },
        follower,
      ),
    limitLedger: p.limits.shared.ledger,
    limitGate: p.limits.shared.gate,
    heardClaim: (slot, limitId, scopeKey) => p.limits.heardClaim(slot, limitId, scopeKey),
    tripped(limitId, key, windowStart, resetsAt) {
      const record = p.limits.record(limitId);
      if (record !== undefined) p.limits.admission.tripped(record, key, windowStart, resetsAt);
    },
    // The settings family has applied `s` to the main thread's edge config before it tells its followers.
    edgeSettings: (s) => ({
      allowedOrigins: [...s.cors.allowedOrigins],
      jsonBodyBytes: p.edgeConfig.jsonBodyLimit,
      multipartBodyBytes: p.edgeConfig.multipartBodyLimit,
      bodyBudgetBytes: Math.floor(p.edgeConfig.bodyBudgetLimit / threads),
      providerOrder: [...s.routing.providerOrder],
      sessionIdleMs: s.routing.sessionIdleMinutes * 60_000,
      usageEnabled: s.usage.enabled,
      requestLog: { ...s.requestLog, tokenIds: [...s.requestLog.tokenIds] },
    }),
    smart: p.gatewaySmart,
    providers: p.providers,
    runtime: p.local.runtimePool,
    recordUsage: (event, mark) => p.recordUsage(event, mark),
    noteUses: (uses) => p.tokens.noteUses(uses),
    writeLine: lineWriter(p.log),
  });
}

/** A port free now on `host` (the kernel's pick for port 0). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
