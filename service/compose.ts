import { join } from 'node:path';
import type { Logger } from 'pino';
import { auditRepo } from '../store/audit-repo.ts';
import { openStoreEnv } from '../store/env.ts';
import { metaRepo } from '../store/meta-repo.ts';
import { settingsRepo } from '../store/settings-repo.ts';
import { tokenRepo } from '../store/token-repo.ts';
import { modelRepo } from '../store/model-repo.ts';
import { providerRepo } from '../store/provider-repo.ts';
import { openVault } from '../store/vault/index.ts';
import { createProxyPool } from '../workers/proxy/pool.ts';
import { createRelayPool } from '../workers/proxy/relay-pool.ts';
import { responseRouteRepo } from '../store/response-route-repo.ts';
import { ensurePrivateDir } from '../store/env.ts';
import { lockDataDir } from '../store/dir-lock.ts';
import { gatewayRoutes } from '../edge/gateway/routes.ts';
import { createHardwareActor } from '../workers/hardware/actor.ts';
import { hardwareRoutes } from '../edge/routes/hardware.ts';
import { createMeter } from '../workers/meter/actor.ts';
import { usageRepo } from '../store/usage-repo.ts';
import { usageRoutes } from '../edge/routes/usage.ts';
import { withEmbeddedRuntime } from '../workers/runtime/runtime-pool.ts';
import { embeddedFallback, runtimeRoutes } from '../edge/routes/runtime.ts';
import { modelActions } from '../control/model-actions.ts';
import { serviceActions } from '../control/service-actions.ts';
import { firstOf, plainNames } from '../edge/gateway/plain-names.ts';
import { runtimeDiscoveryRoutes } from '../edge/routes/runtime-discovery.ts';
import { createRuntimeDiscovery } from '../control/runtime-discovery.ts';
import { createEventBus, eventsPort } from '../control/events.ts';
import { createJobs } from '../control/jobs.ts';
import { jobRoutes } from '../edge/routes/jobs.ts';
import { createLocalRuntime } from '../control/local-runtime.ts';
import { serviceRoutes } from '../edge/routes/services.ts';
import { createLogTail, type LogTail } from '../edge/http/log-tail.ts';
import { logRoutes } from '../edge/routes/logs.ts';
import { createCatalogService } from '../control/catalog-service.ts';
import { createProviderService } from '../control/provider-service.ts';
import { capabilitiesRoute } from '../edge/routes/capabilities.ts';
import { openapiRoute } from '../edge/routes/openapi.ts';
import { catalogRoutes } from '../edge/routes/catalog.ts';
import { modelRoutes } from '../edge/routes/models.ts';
import { createSmartRouting } from './smart-routing.ts';
import { providerRoutes } from '../edge/routes/providers.ts';
import type { RouteDef } from '../edge/http/router.ts';
import { createApp } from '../edge/http/app.ts';
import { createBodyBudget, defaultBodyBudget } from '../edge/http/body-budget.ts';
import { sweepSpillDir } from '../edge/http/multipart-spill.ts';
import { corsPolicy, type CorsPolicy } from '../edge/http/cors.ts';
import { recordInstance, TOKEN_FILE } from './data-dir.ts';
import { auditRoutes } from '../edge/routes/audit.ts';
import { processRoutes, VERSION_INFO } from '../edge/routes/process.ts';
import { createServiceMetrics } from '../control/metrics/service.ts';
import { metricsRoutes } from '../edge/routes/metrics.ts';
import { settingsRoutes } from '../edge/routes/settings.ts';
import { tokenRoutes } from '../edge/routes/tokens.ts';
import { listen } from '../edge/http/server.ts';
import { chooseEdge, type EdgeMode } from '../edge/http/choose-edge.ts';
import { createSettingsService, type ListenerInfo } from '../control/settings-service.ts';
import { createTokenService } from '../control/token-service.ts';
import { createGaugeActor, gaugeOptionsFromEnv } from '../workers/gauge/actor.ts';
import { gaugeDataRepo } from '../store/gauge-data-repo.ts';
import { LIVE_HEADERS_ACCOUNT_PREFIX } from '../protocol/gauge-catalog.ts';
import { gaugeSourceRepo } from '../store/gauge-source-repo.ts';
import { createGaugeService } from '../control/gauge/service.ts';
import { tapCapacity } from '../control/gauge/live-tap.ts';
import { createServiceAccounts, type ServiceAccounts } from '../control/service-accounts.ts';
import { createPairing, pairingOptionsFromEnv } from '../control/pairing.ts';
import { serviceAccountRepo } from '../store/service-account-repo.ts';
import { serviceAccountRoutes } from '../edge/routes/service-accounts.ts';
import { pairingRoutes } from '../edge/routes/pairing.ts';
import { gaugeRoutes } from '../edge/routes/gauge.ts';
import { createCapacitySignal, refreshingCapacity, type GaugeCapacitySignal } from '../control/gauge/capacity-signal.ts';
import { createServiceActivity } from '../control/gauge/service-activity.ts';
import { activityQuery } from '../store/gauge-activity.ts';
import { gaugeInsightRoutes } from '../edge/routes/gauge-insights.ts';
import { gaugeBudgetRepo } from '../store/gauge-budget-repo.ts';
import { createGaugeBudgets } from '../control/gauge/budgets.ts';
import { gaugeBudgetRoutes } from '../edge/routes/gauge-budgets.ts';
import { gaugeAlertRepo } from '../store/gauge-alert-repo.ts';
import { createGaugeAlerts, evaluatingAfterRefresh } from '../control/gauge/alerts.ts';
import { gaugeAlertRoutes } from '../edge/routes/gauge-alerts.ts';
import { authSessionOptionsFromEnv, createAuthSessions } from '../control/gauge/auth-sessions.ts';
import { placementRoutes } from '../edge/routes/runtime-placement.ts';
import { gaugeAuthSessionRoutes } from '../edge/routes/gauge-auth-sessions.ts';
import { dashboardRoutes } from '../edge/routes/dashboard.ts';

// The composition root: opens the store, builds the hot state, binds the listener, and knows how to stop.

export interface ServiceOptions {
  dataDir: string;
  port: number;
  log: Logger;
  /** SWITCHYARD_EDGE: a native uWebSockets.js build when one loads (`auto`), node:http (`node`), or native only (`uws`). */
  edge?: EdgeMode;
  /** The newest lines `log` wrote, for GET /v1/logs (empty when the logger keeps none). */
  logTail?: LogTail;
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

const LAST_USED_FLUSH_MS = 30_000;
const MODEL_LIST_CHECK_MS = 60_000;

export async function startService({ dataDir, port, log, edge: edgeMode = 'auto', logTail = createLogTail() }: ServiceOptions): Promise<RunningService> {
  const { edge, uws, build, failures } = chooseEdge(edgeMode);
  if (build !== undefined) log.info({ edge, build }, 'native uWebSockets.js binary loaded');
  else if (edgeMode === 'node') log.info({ edge }, 'serving HTTP with node:http (SWITCHYARD_EDGE=node)');
  else log.warn({ edge, failures }, 'no native uWebSockets.js build loads here: serving HTTP with node:http instead (see README)');

  ensurePrivateDir(dataDir);
  const lock = lockDataDir(dataDir);
  const env = openStoreEnv(dataDir);
  const audit = auditRepo(env);
  const tokenFile = join(dataDir, TOKEN_FILE);
  let serviceAccounts: ServiceAccounts | null = null;
  const tokens = createTokenService({ env, tokens: tokenRepo(env), meta: metaRepo(env), audit, tokenFile, serviceAccountExists: (id) => serviceAccounts?.exists(id) ?? false });
  serviceAccounts = createServiceAccounts({ env, repo: serviceAccountRepo(env), audit, tokenCounts: () => tokens.ownerCounts() });
  const pairing = createPairing({ tokens, ...pairingOptionsFromEnv() });
  const bootstrap = await tokens.bootstrapIfEmpty();
  if (bootstrap) log.info({ tokenId: bootstrap.token.id }, 'created the bootstrap admin token');

  const vault = await openVault({ dataDir });
  if (vault.info.backend === 'file' && !vault.info.fileReason?.startsWith('SWITCHYARD_VAULT')) {
    // Keys then sit in a file beside the store (encrypted; its key in the keychain or a 0600 file): say so.
    log.warn({ vault: 'file', keyStorage: vault.info.keyStorage, reason: vault.info.fileReason }, 'provider credentials are kept in the encrypted file vault, not the OS keychain');
  } else log.info({ vault: vault.info.backend, keyStorage: vault.info.keyStorage }, 'credential vault ready');
  const pool = createProxyPool({ dataDir });
  const relayPool = createRelayPool({ dataDir });
  // Job progress, model loads and unloads, service states and Gauge alerts, for GET /v1/events and job streams.
  const bus = createEventBus();
  const jobs = createJobs(bus, { onInternal: (err) => log.error({ err: String(err).slice(0, 500) }, 'a job failed with an internal error') });
  // The listener's port once bound (port 0 picks one then): providers and services must not point at it.
  let boundPort: number | null = null;
  const local = createLocalRuntime({ dataDir, env, audit, bus, jobs, log, settings: () => settings.current(), catalog: () => catalog, providers: () => providers, ownPort: () => boundPort });
  const { modelsDirectory, runtimePool, library, services, benchmarks } = local;
  const hardware = createHardwareActor({ log });
  // Gauge's worker owns collection; the edge keeps setup (sources) and reads what was collected from LMDB.
  // Alerts evaluate as soon as a scheduled collection has committed new readings (set once alerts exist).
  let gaugeCollected = (): void => undefined;
  const gauge = createGaugeActor({ dataDir, log, ...gaugeOptionsFromEnv(), onCollected: () => gaugeCollected() });
  const gaugeSources = gaugeSourceRepo(env);
  const gaugeData = gaugeDataRepo(env);
  await gaugeSources.ensureBuiltIns(Date.now());
  const rekeyed = await gaugeData.upgradeKeys();
  if (rekeyed > 0) log.info({ rekeyed }, 'rewrote Gauge history and activity keys of the first store layout');
  const spillDir = join(dataDir, 'tmp');
  ensurePrivateDir(spillDir);
  // Before the listener: no upload of this run has spilled yet, so every match is a dead run's leftover.
  const swept = await sweepSpillDir(spillDir);
  if (swept > 0) log.info({ files: swept }, 'removed upload spill files left by an earlier run');
  const responses = responseRouteRepo(env);
  responses.prune().catch((err: unknown) => log.warn({ err: String(err) }, 'could not prune old response routes'));

  const models = modelRepo(env);
  const providerStore = providerRepo(env);
  const catalog = createCatalogService({ env, models, audit, providers: () => providerStore.all() });
  // Smart Route's capacity strategy and GET /v1/gauge/capacity read one signal: live headers plus Gauge's readings.
  let gaugeCapacity!: GaugeCapacitySignal;
  const smartRoute = createSmartRouting({
    env,
    audit,
    catalog,
    capacitySignal: (live) =>
      (gaugeCapacity = createCapacitySignal({ live, readings: () => gaugeData.readings(), sources: () => gaugeSources.all(), catalog: () => catalog.current(), enabled: () => settings.current().gauge.enabled })),
  });
  const providers = createProviderService({
    env,
    providers: providerStore,
    models,
    audit,
    vault,
    // The library holds no credential to echo.
    lister: (target, ref) => (target.kind === 'embedded' ? local.embeddedLister(target, ref).then((models) => ({ models, withheld: 0 })) : pool.listModels(target, ref)),
    onChange: (id, record, listing) => catalog.providerChanged(id, record, listing),
    log,
    // Read at each check: the listener is bound after this is built (port 0 picks one then).
    ownPort: () => boundPort,
    forgetProvider: (id) => gaugeData.prepareRemoveAccount('live-headers', LIVE_HEADERS_ACCOUNT_PREFIX + id),
  });

  const savedSettings = settingsRepo(env).load();
  const listener: ListenerInfo = {
    host: savedSettings.bind.networkExposed ? '0.0.0.0' : '127.0.0.1',
    port,
    networkExposed: savedSettings.bind.networkExposed,
  };
  let cors: CorsPolicy = corsPolicy([]);
  let jsonBodyLimit = savedSettings.limits.jsonBodyBytes;
  let multipartBodyLimit = savedSettings.limits.multipartBodyBytes;
  const autoBodyBudget = defaultBodyBudget();
  let bodyBudgetLimit = savedSettings.limits.inflightBodyBytes ?? autoBodyBudget;
  const settings = createSettingsService({
    env,
    repo: settingsRepo(env),
    audit,
    listener,
    // Read at each GET: the file vault's key storage is known only once its file exists.
    vault: {
      get backend() {
        return vault.info.backend;
      },
      get keyStorage() {
        return vault.info.keyStorage;
      },
      get reason() {
        return vault.info.fileReason ?? null;
      },
    },
    onChange(next) {
      const wasWildcard = cors.wildcard;
      cors = corsPolicy(next.cors.allowedOrigins);
      if (cors.wildcard && !wasWildcard) {
        log.warn('cors.allowedOrigins holds "*": any web page may now try authenticated requests; list origins instead');
      }
      jsonBodyLimit = next.limits.jsonBodyBytes;
      multipartBodyLimit = next.limits.multipartBodyBytes;
      bodyBudgetLimit = next.limits.inflightBodyBytes ?? autoBodyBudget;
      gauge.configure(next.gauge.enabled, next.gauge.retentionDays);
      library.reconfigure();
    },
  });

  // The meter is the single writer of usage aggregates; it reads the usage posture on every record.
  const meter = createMeter({
    dataDir,
    enabled: () => settings.current().usage.enabled,
    retentionDays: () => settings.current().usage.retentionDays,
    log,
    priceOf: (modelId) => catalog.current().get(modelId)?.pricing ?? null,
  });
  // The `service` source's hourly activity: folded in memory per call, written in batches.
  const serviceActivity = createServiceActivity({
    env,
    data: gaugeData,
    enabled: () => settings.current().gauge.enabled && settings.current().usage.enabled,
    sourceEnabled: () => gaugeSources.get('service')?.enabled === true,
  });

  // GET /metrics: counted on the app's answers, the relay's calls and the usage events; the rest read at a scrape.
  const metrics = createServiceMetrics({
    version: VERSION_INFO.version,
    edge,
    proxyPool: () => pool.stats(),
    meter: () => meter.stats(),
    arenaInUse: () => relayPool.arena.inUse(),
    *gaugeSources() {
      for (const source of gaugeSources.all()) {
        const state = gaugeData.state(source.id)?.state;
        yield { kind: source.kind, enabled: source.enabled, lastOutcome: state?.lastOutcome ?? null, consecutiveFailures: state?.consecutiveFailures ?? 0 };
      }
    },
  });

  // After the settings exist: listing the library reads the models directory from them.
  await local.start();

  // Budget statuses come from the meter's usage (and Gauge readings while Gauge is on); a write re-evaluates alerts.
  const gaugeBudgets = createGaugeBudgets({
    env,
    repo: gaugeBudgetRepo(env),
    audit,
    usage: usageRepo(env),
    readings: () => gaugeData.readings().map((r) => r.reading),
    gaugeEnabled: () => settings.current().gauge.enabled,
    providerExists: (id) => providerStore.all().some((p) => p.id === id),
    sources: gaugeSources,
    onChange: () => void gaugeAlerts.evaluateQuietly(),
  });
  // Alerts evaluate after each refresh a person asks for, before each events list, and on a timer (the worker's
  // scheduled refreshes).
  const gaugeAlerts = createGaugeAlerts({ env, repo: gaugeAlertRepo(env), data: gaugeData, sources: gaugeSources, audit, settings: () => settings.current().gauge, budgets: (at) => gaugeBudgets.budgetStatuses(at), log, onEvent: (event) => void bus.publish('gauge.alert', event) });
  gaugeCollected = () => void gaugeAlerts.evaluateQuietly();
  const gaugeService = createGaugeService({ env, sources: gaugeSources, data: gaugeData, vault, audit, actor: evaluatingAfterRefresh(refreshingCapacity(gauge, () => gaugeCapacity), gaugeAlerts), settings: () => settings.current().gauge });
  // Device flows that connect Gauge accounts: in memory, ended on shutdown.
  const authSessions = createAuthSessions({ service: gaugeService, settings: () => settings.current().gauge, log, ...authSessionOptionsFromEnv() });

  let draining = false;
  const routes: RouteDef[] = [
    ...processRoutes(() => draining, edge),
    ...dashboardRoutes(),
    ...metricsRoutes(metrics.render),
    ...settingsRoutes(settings),
    ...tokenRoutes(tokens),
    ...serviceAccountRoutes(serviceAccounts),
    ...pairingRoutes(pairing),
    ...auditRoutes(audit),
    ...hardwareRoutes(hardware),
    ...providerRoutes(providers, catalog, models),
    ...catalogRoutes(catalog, modelActions({ catalog, runtime: runtimePool, env, audit, jobs, bus, loadProgress: local.loadProgress, benchmarks })),
    ...jobRoutes({ jobs, bus: eventsPort(bus) }),
    ...modelRoutes(catalog, smartRoute.synthetic),
    ...smartRoute.routes,
    ...gatewayRoutes({
      catalog,
      pool: metrics.tapRelay(withEmbeddedRuntime(relayPool, runtimePool)),
      responses,
      log,
      spillDir,
      recordUsage: (event) => {
        meter.record(event);
        metrics.usage(event);
        serviceActivity.record(event);
        gauge.traffic();
      },
      // Gauge's live-headers source hears the same answer heads as Smart Route's capacity tracker.
      smart: { ...smartRoute.smart, capacity: tapCapacity(smartRoute.smart.capacity, () => catalog.current(), gauge) },
      // A name the catalog does not know: a GGUF file of the embedded runtime, else a provider's plain model name.
      unresolved: firstOf(embeddedFallback(library), plainNames(() => settings.current().routing.providerOrder)),
    }),
    ...usageRoutes(usageRepo(env, (tokenId) => tokens.ownerOf(tokenId))),
    ...runtimeRoutes({ library, runtime: runtimePool, catalog }),
    ...placementRoutes({ library, catalog, hardware, modelsDirectory, tuning: local.tuning, benchmarks }),
    ...runtimeDiscoveryRoutes(createRuntimeDiscovery({ providers: () => providerStore.all() })),
    ...serviceRoutes(services, serviceActions(services, jobs)),
    ...logRoutes(logTail),
    ...gaugeRoutes({
      service: gaugeService,
      sources: gaugeSources,
      data: gaugeData,
      settings: () => settings.current().gauge,
    }),
    ...gaugeAuthSessionRoutes(authSessions),
    ...gaugeAlertRoutes(gaugeAlerts, () => settings.current().gauge),
    ...gaugeBudgetRoutes(gaugeBudgets),
    ...gaugeInsightRoutes({
      data: gaugeData,
      sources: gaugeSources,
      activity: activityQuery(env),
      flushServiceActivity: () => serviceActivity.flush(),
      signal: gaugeCapacity,
      catalog: () => catalog.current(),
      settings: () => settings.current().gauge,
    }),
  ];
  routes.push(capabilitiesRoute(() => routes), openapiRoute(() => routes));
  const app = createApp({
    routes,
    log,
    authenticate: (secret) => tokens.authenticate(secret),
    cors: () => cors,
    jsonBodyLimit: () => jsonBodyLimit,
    multipartBodyLimit: () => multipartBodyLimit,
    listener,
    isDraining: () => draining,
    observe: metrics.observer,
  });

  /** Every part built above, in an order where each one's last writes reach the parts closed after it. */
  async function closeParts(): Promise<void> {
    library.close();
    await services.close();
    await providers.close();
    await pool.close();
    await relayPool.close();
    await runtimePool.close();
    // After the relay: every call that finished has recorded its usage, and the meter commits it now.
    await meter.close();
    await serviceActivity.close();
    await hardware.close();
    await authSessions.close();
    await gaugeAlerts.close();
    await gauge.close();
    metrics.close();
    await tokens.flushLastUsed().catch(() => undefined);
    await env.close();
    lock.release();
  }

  let listening;
  try {
    listening = await listen(uws, app, listener.host, port, { arena: relayPool.arena, bodyBudget: createBodyBudget(() => bodyBudgetLimit) });
  } catch (err) {
    await closeParts();
    throw err;
  }
  listener.port = listening.port;
  boundPort = listening.port;
  log.info({ host: listener.host, port: listener.port, networkExposed: listener.networkExposed }, 'listening');
  // So that `switchyard token` finds this data directory without SWITCHYARD_HOME (bin/locate.js).
  const forgetInstance = recordInstance({ port: listener.port, dataDir });

  const flushTimer = setInterval(() => {
    tokens.flushLastUsed().catch((err: unknown) => log.warn({ err: String(err) }, 'could not record token last use'));
  }, LAST_USED_FLUSH_MS);
  flushTimer.unref();
  // Model lists are fetched in the proxy pool on this timer and on provider changes, never on a request.
  providers.refreshStale();
  const refreshTimer = setInterval(() => providers.refreshStale(), MODEL_LIST_CHECK_MS);
  refreshTimer.unref();
  gaugeAlerts.start();

  let closing: Promise<void> | null = null;
  async function close(drainMs = 10_000): Promise<void> {
    draining = true;
    // Event streams never end by themselves: end them now, or the drain would wait its whole time on them.
    bus.close();
    pairing.close();
    listening!.stopListening();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([listening!.idle(), new Promise((r) => (timer = setTimeout(r, drainMs)))]);
    clearTimeout(timer);
    if (listening!.inflight() > 0) log.warn({ inflight: listening!.inflight() }, 'shutting down with requests still in flight');
    clearInterval(flushTimer);
    clearInterval(refreshTimer);
    await closeParts();
    forgetInstance();
    log.info('stopped');
  }

  return {
    port: listener.port,
    host: listener.host,
    tokenFile,
    modelsDirectory,
    bootstrapSecret: bootstrap?.secret ?? null,
    close: (drainMs) => (closing ??= close(drainMs)),
  };
}
