import { randomUUID } from 'node:crypto';
import { createServiceActivity, type ServiceActivity } from '../../control/gauge/service-activity.ts';
import { createTraces, type Traces } from '../../control/traces/traces.ts';
import { createServiceMetrics, type ServiceMetrics } from '../../metrics/service.ts';
import { metricsRoutes } from '../../edge/routes/metrics.ts';
import { VERSION_INFO } from '../../edge/routes/process.ts';
import { usageRoutes } from '../../edge/routes/usage.ts';
import { usageRepo } from '../../store/usage-repo.ts';
import { resolvePricing, type PriceIndex } from '../../state/price-index.ts';
import { createMeter, type Meter } from '../../workers/meter/actor.ts';
import { createPriceDatabase } from '../../workers/meter/price-db.ts';
import type { ModelPricing } from '../../protocol/http/catalog.ts';
import type { Built, Family } from '../family.ts';
import type { Base, LateParts } from '../parts.ts';
import type { GaugeParts } from './gauge.ts';
import type { SettingsParts } from './settings.ts';
import type { StoreParts } from './store.ts';
import type { TokensParts } from './tokens.ts';

export interface UsageParts {
  meter: Meter;
  /** The price database behind catalog models without `pricing` (workers/meter/price-db.ts). */
  prices: PriceIndex;
  /** A catalog model's USD price now: its record's, else the price database's (the meter and dollar limits). */
  priceOf(modelId: string): ModelPricing | null;
  /** This start's ID, which the usage journal files carry (store/usage-journal.ts). */
  usageRun: string;
  serviceActivity: ServiceActivity;
  metrics: ServiceMetrics;
  /** OpenTelemetry spans of the gateway's calls, made from their usage events (setting `traces`). */
  traces: Traces;
}

/**
 * Usage and metrics. The meter is the single writer of usage aggregates; it reads the usage posture on every
 * record. It starts before the gateway so that it closes after it: every call that finished has recorded its
 * usage by then, and the meter commits it.
 */
export function usageFamily(
  p: Base & StoreParts & TokensParts & SettingsParts & GaugeParts,
  late: Pick<LateParts, 'catalog' | 'pool' | 'keyPool' | 'relayPool' | 'serviceActivity'>,
): Built<UsageParts> {
  const { env, log, dataDir } = p;
  const settings = () => p.settings.current();
  // Built once here; each upstream model's price is looked up at its first metered call and kept.
  const prices = createPriceDatabase();
  // The catalog record's price, else the database's for its provider's kind and upstream model ID; with it the
  // source, which the usage answers name.
  const priced = (modelId: string) => {
    const catalog = late.catalog.get().current();
    const model = catalog.get(modelId);
    return model === undefined ? null : resolvePricing(model, catalog.provider(model.providerId), prices);
  };
  const priceOf = (modelId: string) => priced(modelId)?.pricing ?? null;
  // Hex, so that it fits the journal's file names.
  const usageRun = randomUUID().replaceAll('-', '');
  const meter = createMeter({
    dataDir,
    run: usageRun,
    enabled: () => settings().usage.enabled,
    retentionDays: () => settings().usage.retentionDays,
    log,
    priceOf: priced,
  });
  // The `service` source's hourly activity: folded in memory per call, written in batches.
  const serviceActivity = late.serviceActivity.bind(
    createServiceActivity({
      env,
      data: p.gaugeData,
      enabled: () => settings().gauge.enabled && settings().usage.enabled,
      sourceEnabled: () => p.gaugeSources.get('service')?.enabled === true,
    }),
  );
  // GET /metrics: counted on the app's answers, the relay's calls and the usage events; the rest read at a scrape.
  const metrics = createServiceMetrics({
    version: VERSION_INFO.version,
    edge: p.edge,
    proxyPool: () => late.pool.get().stats(),
    meter: () => meter.stats(),
    arenaInUse: () => late.relayPool.get().arena.inUse(),
    // Each provider key's state, read from the key pool's shared table (every edge thread's view).
    *credentials() {
      const catalog = late.catalog.get().current();
      const keyPool = late.keyPool.get();
      for (const providerId of catalog.providerIds()) {
        for (const c of catalog.provider(providerId)?.credentials ?? []) {
          const live = keyPool.live(c.id);
          const state = !c.enabled
            ? 'disabled'
            : keyPool.refused(c)
              ? 'rejected'
              : live.coolingUntil !== null
                ? 'cooling'
                : 'usable';
          yield {
            providerId,
            credentialId: c.id,
            state,
            requestsRemaining: live.headroom?.requests?.remaining ?? null,
            tokensRemaining: live.headroom?.tokens?.remaining ?? null,
            inflight: live.inflight,
            sessions: live.sessions,
          } as const;
        }
      }
    },
    *gaugeSources() {
      for (const source of p.gaugeSources.all()) {
        const state = p.gaugeData.state(source.id)?.state;
        yield {
          kind: source.kind,
          enabled: source.enabled,
          lastOutcome: state?.lastOutcome ?? null,
          consecutiveFailures: state?.consecutiveFailures ?? 0,
        };
      }
    },
  });
  const traces = createTraces({ catalog: () => late.catalog.get().current(), version: VERSION_INFO.version, log });
  const unfollow = p.followSettings((next) => traces.apply(next.traces));
  const family: Family = {
    routes: () => [
      // Every edge thread's series, added up (edge-threads.ts).
      ...metricsRoutes(async () => metrics.render(await p.edgeThreadMetrics())),
      ...usageRoutes(usageRepo(env, (tokenId) => p.tokens.ownerOf(tokenId))),
    ],
    async close() {
      unfollow();
      metrics.close();
      // After the gateway's close: every call's spans are made, and go out with this flush.
      await traces.close();
      await serviceActivity.close();
      await meter.close();
    },
  };
  return { family, parts: { meter, prices, priceOf, usageRun, serviceActivity, metrics, traces } };
}
