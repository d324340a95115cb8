import type { Logger } from 'pino';
import type { CatalogService } from '../control/catalog-service.ts';
import type { EventBus } from '../control/events.ts';
import type { AuthSessions } from '../control/gauge/auth-sessions.ts';
import type { GaugeCapacitySignal } from '../control/gauge/capacity-signal.ts';
import type { GaugeService } from '../control/gauge/service.ts';
import type { Jobs } from '../control/jobs.ts';
import type { LocalRuntime } from '../control/local-runtime.ts';
import type { createServiceMetrics } from '../metrics/service.ts';
import type { Pairing } from '../control/pairing.ts';
import type { ProviderService } from '../control/provider-service.ts';
import type { ServiceAccounts } from '../control/service-accounts.ts';
import type { ListenerInfo, SettingsService } from '../control/settings-service.ts';
import type { createSmartRouting } from './smart-routing.ts';
import type { TokenService } from '../control/token-service.ts';
import type { createGaugeAlerts } from '../control/gauge/alerts.ts';
import type { createGaugeBudgets } from '../control/gauge/budgets.ts';
import type { createServiceActivity } from '../control/gauge/service-activity.ts';
import type { CorsPolicy } from '../edge/http/cors.ts';
import type { EdgeName } from '../edge/http/choose-edge.ts';
import type { LogTail } from '../edge/http/log-tail.ts';
import type { StoredSettings } from '../protocol/http/settings.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { GaugeDataRepo } from '../store/gauge-data-repo.ts';
import type { GaugeSourceRepo } from '../store/gauge-source-repo.ts';
import type { ModelRepo } from '../store/model-repo.ts';
import type { ProviderRepo } from '../store/provider-repo.ts';
import type { Vault } from '../store/vault/index.ts';
import type { GaugeActor } from '../workers/gauge/actor.ts';
import type { HardwareActor } from '../workers/hardware/actor.ts';
import type { Meter } from '../workers/meter/actor.ts';
import type { PriceIndex } from '../state/price-index.ts';
import type { createLimits } from '../control/limits.ts';
import type { ModelPricing } from '../protocol/http/catalog.ts';
import type { ProxyPool } from '../workers/proxy/task-pool.ts';
import type { ControlChannel } from './control-channel.ts';
import type { AuthTable } from '../state/auth-table.ts';
import type { KeyPool } from '../edge/gateway/key-pool.ts';
import type { createRelayPool } from '../workers/proxy/relay-pool.ts';
import type { MetricSnapshot } from '../metrics/registry.ts';
import type { UsageEvent } from '../protocol/gateway.ts';
import type { JournalMark } from '../store/usage-journal.ts';
import type { SmartRoutingPort } from '../protocol/ports/smart-route.ts';

// What the families build, in one place the later families read from. A family sets its own members while it
// starts (service/families/*.ts, in compose.ts's order); a member of a later family is read only inside a
// callback that runs after every family has started (a route, a timer, a settings change).

export interface Parts {
  dataDir: string;
  log: Logger;
  logTail: LogTail;
  edge: EdgeName;
  /** The listener's port once bound (port 0 picks one then): providers and services must not point at it. */
  boundPort: number | null;
  draining: boolean;
  /** How the routes reach the control plane's ports (control-channel.ts). */
  control: ControlChannel;

  // store
  env: StoreEnv;
  audit: AuditRepo;
  vault: Vault;
  providerStore: ProviderRepo;
  models: ModelRepo;
  tokenFile: string;
  // tokens
  tokens: TokenService;
  /** What this thread's edge authenticates against (state/auth-table.ts), fed by `tokens`. */
  auth: AuthTable;
  serviceAccounts: ServiceAccounts;
  pairing: Pairing;
  bootstrapSecret: string | null;
  // events
  bus: EventBus;
  jobs: Jobs;
  // settings
  settings: SettingsService;
  listener: ListenerInfo;
  edgeConfig: EdgeConfig;
  /** Calls `follow` with the settings now and after each change. */
  followSettings(follow: (next: StoredSettings) => unknown): () => void;
  // gauge
  gauge: GaugeActor;
  gaugeSources: GaugeSourceRepo;
  gaugeData: GaugeDataRepo;
  gaugeBudgets: ReturnType<typeof createGaugeBudgets>;
  gaugeAlerts: ReturnType<typeof createGaugeAlerts>;
  gaugeService: GaugeService;
  authSessions: AuthSessions;
  /** Set by the gateway family: Smart Route's capacity strategy and GET /v1/gauge/capacity read one signal. */
  gaugeCapacity: GaugeCapacitySignal;
  // usage and metrics
  meter: Meter;
  /** The price database behind catalog models without `pricing` (workers/meter/price-db.ts). */
  prices: PriceIndex;
  serviceActivity: ReturnType<typeof createServiceActivity>;
  metrics: ReturnType<typeof createServiceMetrics>;
  /** The metrics of the edge threads beside this one (service/edge-threads.ts); none with one edge thread. */
  edgeThreadMetrics(): Promise<MetricSnapshot[][]>;
  // providers and catalog
  pool: ProxyPool;
  catalog: CatalogService;
  providers: ProviderService;
  /** The shared table of keys' live headroom and of sessions (state/key-pool-table.ts), and this thread's pool. */
  keyPoolBuffer: SharedArrayBuffer;
  /** This start's ID, which the usage journal files carry (store/usage-journal.ts). */
  usageRun: string;
  keyPool: KeyPool;
  // runtime
  hardware: HardwareActor;
  local: LocalRuntime;
  // gateway
  relayPool: ReturnType<typeof createRelayPool>;
  smartRoute: ReturnType<typeof createSmartRouting>;
  /** Where a gateway call's usage goes besides the metrics: the meter, Gauge's activity and its scheduler. */
  /** A settled call's usage; `mark`: where an edge thread journaled it already. */
  recordUsage(event: UsageEvent, mark?: JournalMark | null): void;
  /** What the gateway's routes resolve `@` names with, its capacity tapped for Gauge's live headers. */
  gatewaySmart: SmartRoutingPort;
  limits: ReturnType<typeof createLimits>;
  /** A catalog model's USD price now: its record's, else the price database's (the meter and dollar limits). */
  priceOf(modelId: string): ModelPricing | null;
  /** The clock limits' windows read (a test's own clock in process); Date.now otherwise. */
  now: () => number;
}

/** What the edge reads on each request and a settings change replaces. */
export interface EdgeConfig {
  cors: CorsPolicy;
  jsonBodyLimit: number;
  multipartBodyLimit: number;
  bodyBudgetLimit: number;
}
