import { randomUUID } from 'node:crypto';
import { createServiceActivity } from '../../control/gauge/service-activity.ts';
import { createServiceMetrics } from '../../metrics/service.ts';
import { metricsRoutes } from '../../edge/routes/metrics.ts';
import { VERSION_INFO } from '../../edge/routes/process.ts';
import { usageRoutes } from '../../edge/routes/usage.ts';
import { usageRepo } from '../../store/usage-repo.ts';
import { resolvePricing } from '../../state/price-index.ts';
import { createMeter } from '../../workers/meter/actor.ts';
import { createPriceDatabase } from '../../workers/meter/price-db.ts';
import type { Family } from '../family.ts';
import type { Parts } from '../parts.ts';

/**
 * Usage and metrics. The meter is the single writer of usage aggregates; it reads the usage posture on every
 * record. It starts before the gateway so that it closes after it: every call that finished has recorded its
 * usage by then, and the meter commits it.
 */
export function usageFamily(p: Parts): Family {
  const { env, log, dataDir } = p;
  const settings = () => p.settings.current();
  // Built once here; each upstream model's price is looked up at its first metered call and kept.
  p.prices = createPriceDatabase();
  // The catalog record's price, else the database's for its provider's kind and upstream model ID; with it the
  // source, which the usage answers name.
  const priced = (modelId: string) => {
    const catalog = p.catalog.current();
    const model = catalog.get(modelId);
    return model === undefined ? null : resolvePricing(model, catalog.provider(model.providerId), p.prices);
  };
  p.priceOf = (modelId) => priced(modelId)?.pricing ?? null;
  // Hex, so that it fits the journal's file names.
  p.usageRun = randomUUID().replaceAll('-', '');
  p.meter = createMeter({
    dataDir,
    run: p.usageRun,
    enabled: () => settings().usage.enabled,
    retentionDays: () => settings().usage.retentionDays,
    log,
    priceOf: priced,
  });
  // The `service` source's hourly activity: folded in memory per call, written in batches.
  p.serviceActivity = createServiceActivity({
    env,
    data: p.gaugeData,
    enabled: () => settings().gauge.enabled && settings().usage.enabled,
    sourceEnabled: () => p.gaugeSources.get('service')?.enabled === true,
  });
  // GET /metrics: counted on the app's answers, the relay's calls and the usage events; the rest read at a scrape.
  p.edgeThreadMetrics = async () => [];
  p.metrics = createServiceMetrics({
    version: VERSION_INFO.version,
    edge: p.edge,
    proxyPool: () => p.pool.stats(),
    meter: () => p.meter.stats(),
    arenaInUse: () => p.relayPool.arena.inUse(),
    // Each provider key's state, read from the key pool's shared table (every edge thread's view).
    *credentials() {
      const catalog = p.catalog.current();
      for (const providerId of catalog.providerIds()) {
        for (const c of catalog.provider(providerId)?.credentials ?? []) {
          const live = p.keyPool.live(c.id);
          const state = !c.enabled
            ? 'disabled'
            : p.keyPool.refused(c)
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
  return {
    routes: () => [
      // Every edge thread's series, added up (edge-threads.ts).
      ...metricsRoutes(async () => p.metrics.render(await p.edgeThreadMetrics())),
      ...usageRoutes(usageRepo(env, (tokenId) => p.tokens.ownerOf(tokenId))),
    ],
    async close() {
      p.metrics.close();
      await p.serviceActivity.close();
      await p.meter.close();
    },
  };
}
