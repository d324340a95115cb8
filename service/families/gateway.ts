import { join } from 'node:path';
import { createCapacitySignal } from '../../control/gauge/capacity-signal.ts';
import { tapCapacity } from '../../control/gauge/live-tap.ts';
import { createSmartRouting } from '../smart-routing.ts';
import { firstOf, plainNames } from '../../edge/gateway/plain-names.ts';
import { sweepSpillDir } from '../../edge/http/multipart-spill.ts';
import { embeddedFallback } from '../../edge/routes/runtime.ts';
import { ensurePrivateDir } from '../../store/env.ts';
import { responseRouteRepo } from '../../store/response-route-repo.ts';
import { createRouteWrites, createRouteWritesBuffer } from '../../state/route-writes.ts';
import { createRelayPool } from '../../workers/proxy/relay-pool.ts';
import { wireGateway } from '../gateway-wiring.ts';
import { createReplay } from '../request-replay.ts';
import { notLogged, replayRoutes } from '../../edge/routes/requests.ts';
import type { SmartRoutingPort } from '../../protocol/ports/smart-route.ts';
import type { UsageEvent } from '../../protocol/gateway.ts';
import type { JournalMark } from '../../store/usage-journal.ts';
import type { Built, Family } from '../family.ts';
import type { Base, LateParts } from '../parts.ts';
import type { GaugeParts } from './gauge.ts';
import type { LimitsParts } from './limits.ts';
import type { ProvidersParts } from './providers.ts';
import type { RequestLogParts } from './request-log.ts';
import type { RuntimeParts } from './runtime.ts';
import type { SettingsParts } from './settings.ts';
import type { StoreParts } from './store.ts';
import type { UsageParts } from './usage.ts';

export interface GatewayParts {
  relayPool: ReturnType<typeof createRelayPool>;
  smartRoute: ReturnType<typeof createSmartRouting>;
  /**
   * Where a settled gateway call's usage goes besides the metrics: the meter, Gauge's activity and its scheduler;
   * `mark`: where an edge thread journaled it already.
   */
  recordUsage(event: UsageEvent, mark?: JournalMark | null): void;
  /** What the gateway's routes resolve `@` names with, its capacity tapped for Gauge's live headers. */
  gatewaySmart: SmartRoutingPort;
  /** The response routes being written, one cell for every thread (state/route-writes.ts). */
  routeWrites: SharedArrayBuffer;
  /** Hears every gateway call's usage event, this thread's and the edge threads' (replay, traces). */
  onUsage(listener: (event: UsageEvent) => void): () => void;
}

/** The inference routes, Smart Route (presets, route packs, capacity) and the relay workers that call upstream. */
export async function gatewayFamily(
  p: Base &
    StoreParts &
    SettingsParts &
    GaugeParts &
    UsageParts &
    ProvidersParts &
    RuntimeParts &
    LimitsParts &
    RequestLogParts,
  late: Pick<LateParts, 'relayPool' | 'smartRoute' | 'gaugeCapacity'>,
): Promise<Built<GatewayParts>> {
  const { env, audit, log, dataDir } = p;
  const spillDir = join(dataDir, 'tmp');
  ensurePrivateDir(spillDir);
  // Before the listener: no upload of this run has spilled yet, so every match is a dead run's leftover.
  // Before the listener too, and once the catalog prices them: the calls an unclean stop left in the usage
  // journal are metered before any call of this run.
  await p.meter.recover();
  const swept = await sweepSpillDir(spillDir);
  if (swept > 0) log.info({ files: swept }, 'removed upload spill files left by an earlier run');
  const routeWrites = createRouteWritesBuffer();
  const responses = responseRouteRepo(env, createRouteWrites(routeWrites));
  responses.prune().catch((err: unknown) => log.warn({ err: String(err) }, 'could not prune old response routes'));
  const smartRoute = late.smartRoute.bind(
    createSmartRouting({
      env,
      audit,
      catalog: p.catalog,
      control: p.control,
      capacitySignal: (live) =>
        late.gaugeCapacity.bind(
          createCapacitySignal({
            live,
            readings: () => p.gaugeData.readings(),
            sources: () => p.gaugeSources.all(),
            catalog: () => p.catalog.current(),
            enabled: () => p.settings.current().gauge.enabled,
          }),
        ),
    }),
  );
  const relayPool = late.relayPool.bind(createRelayPool({ dataDir }));
  const listeners = new Set<(event: UsageEvent) => void>();
  const told = (event: UsageEvent) => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (err) {
        log.warn({ reqId: event.requestId, err: String(err).slice(0, 300) }, 'a usage listener failed');
      }
    }
  };
  const onUsage = (listener: (event: UsageEvent) => void) => {
    listeners.add(listener);
    return () => void listeners.delete(listener);
  };
  /** What every settled call tells besides the meter and the metrics, whichever thread served it. */
  const settled = (event: UsageEvent) => {
    p.serviceActivity.record(event);
    p.gauge.traffic();
    p.traces.record(event);
    told(event);
  };
  // An edge thread's calls report here (edge-threads.ts); it counts their metrics itself.
  const recordUsage: GatewayParts['recordUsage'] = (event, mark) => {
    p.meter.record(event, mark);
    settled(event);
  };
  const { smart } = smartRoute;
  // Gauge's live-headers source hears the same answer heads as Smart Route's capacity tracker.
  const gatewaySmart = { ...smart, capacity: tapCapacity(smart.capacity, () => p.catalog.current(), p.gauge) };
  const gatewayRoutes = wireGateway({
    catalog: p.catalog,
    relay: relayPool,
    runtime: p.local.runtimePool,
    tap: (pool) => p.metrics.tapRelay(pool),
    responses,
    log,
    spillDir,
    limits: p.limits.admission,
    priceOf: p.priceOf,
    keyPool: p.keyPool,
    rejectCredential: (providerId, credentialId, status, seenUpdatedAt) =>
      p.providers.rejectCredential(providerId, credentialId, status, seenUpdatedAt),
    meterUsage: (event) => p.meter.record(event),
    requestLog: p.requestLogSink,
    recordUsage: (event) => {
      p.metrics.usage(event);
      settled(event);
    },
    smart: gatewaySmart,
    // A name the catalog does not know: a GGUF file of the embedded runtime, else a provider's plain model name.
    unresolved: firstOf(
      embeddedFallback(p.local.library),
      plainNames(() => p.settings.current().routing.providerOrder),
    ),
  });
  // Replays run through the very routes above, as their caller (service/request-replay.ts).
  const byName = new Map(gatewayRoutes.map((r) => [`${r.method} ${r.path}`, r]));
  const replay = createReplay({
    entry: async (id) => {
      const entry = await p.requestLog.get(id);
      if (entry === undefined) throw notLogged(id);
      return entry;
    },
    route: (name) => byName.get(name),
    onUsage,
    priceOf: p.priceOf,
  });
  const family: Family = {
    routes: () => [...smartRoute.routes, ...gatewayRoutes, ...replayRoutes({ replay })],
    cut: () => relayPool.close(),
    close: () => relayPool.close(),
  };
  return { family, parts: { relayPool, smartRoute, recordUsage, gatewaySmart, routeWrites, onUsage } };
}
