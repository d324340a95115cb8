import { createCatalogService } from '../../control/catalog-service.ts';
import { createProviderService } from '../../control/provider-service.ts';
import { upgradeProviders } from '../../control/provider-upgrade.ts';
import { catalogRoutes } from '../../edge/routes/catalog.ts';
import { modelRoutes } from '../../edge/routes/models.ts';
import { providerRoutes } from '../../edge/routes/providers.ts';
import { providerCredentialRoutes } from '../../edge/routes/provider-credentials.ts';
import { modelActions } from '../../control/model-actions.ts';
import { LIVE_HEADERS_ACCOUNT_PREFIX } from '../../protocol/gauge-catalog.ts';
import { createProxyPool } from '../../workers/proxy/task-pool.ts';
import { createKeyPoolBuffer, createKeyPoolTable } from '../../state/key-pool-table.ts';
import { createKeyPool } from '../../edge/gateway/key-pool.ts';
import { credentialLive } from '../../edge/gateway/key-live.ts';
import type { Family } from '../family.ts';
import type { Parts } from '../parts.ts';
import { PROVIDERS_METHODS, type ProvidersPort } from '../../protocol/ports/providers.ts';
import { CATALOG_METHODS, type CatalogCalls } from '../../protocol/ports/catalog.ts';

const MODEL_LIST_CHECK_MS = 60_000;

/**
 * Providers and the catalog. Model lists are fetched in the proxy pool on a timer and on provider changes, never on a
 * request.
 */
export async function providersFamily(p: Parts): Promise<Family> {
  const { env, audit, log, vault, models, providerStore } = p;
  // Before the catalog and the providers read a record: each one holds a list of credentials from here on.
  const upgraded = await upgradeProviders({ env, providers: providerStore, audit });
  if (upgraded > 0) log.info({ providers: upgraded }, 'provider records upgraded to hold several credentials');
  p.pool = createProxyPool({ dataDir: p.dataDir });
  p.keyPoolBuffer = createKeyPoolBuffer();
  p.keyPool = createKeyPool({
    table: createKeyPoolTable(p.keyPoolBuffer),
    idleMs: () => p.settings.current().routing.sessionIdleMinutes * 60_000,
  });
  try {
    p.catalog = createCatalogService({
      env,
      models,
      audit,
      providers: () => providerStore.all(),
      prices: p.prices,
    });
    p.providers = createProviderService({
      env,
      providers: providerStore,
      models,
      audit,
      vault,
      // The library holds no credential to echo.
      lister: (target, ref) =>
        target.kind === 'embedded'
          ? p.local.embeddedLister(target, ref).then((listed) => ({ models: listed, withheld: 0 }))
          : p.pool.listModels(target, ref),
      onChange: (id, record, listing) => p.catalog.providerChanged(id, record, listing),
      log,
      bus: p.bus,
      live: (credential) => credentialLive(p.keyPool.live(credential.id), p.keyPool.refusedAt(credential)),
      // Read at each check: the listener is bound after this is built (port 0 picks one then).
      ownPort: () => p.boundPort,
      forgetProvider: (id) => p.gaugeData.prepareRemoveAccount('live-headers', LIVE_HEADERS_ACCOUNT_PREFIX + id),
    });
  } catch (err) {
    await p.pool.close();
    throw err;
  }
  let refreshTimer: NodeJS.Timeout | undefined;
  const providers = p.control.port<ProvidersPort>('providers', p.providers, PROVIDERS_METHODS);
  return {
    routes: () => [
      ...providerRoutes(providers, p.catalog, models),
      ...providerCredentialRoutes(providers),
      ...catalogRoutes(
        p.control.port<CatalogCalls>('catalog', p.catalog, CATALOG_METHODS),
        modelActions({
          catalog: p.catalog,
          runtime: p.local.runtimePool,
          env,
          audit,
          jobs: p.jobs,
          bus: p.bus,
          loadProgress: p.local.loadProgress,
          benchmarks: p.local.benchmarks,
        }),
      ),
      ...modelRoutes(p.catalog, p.smartRoute.synthetic),
    ],
    ready() {
      p.providers.refreshStale();
      refreshTimer = setInterval(() => p.providers.refreshStale(), MODEL_LIST_CHECK_MS);
      refreshTimer.unref();
    },
    async close() {
      clearInterval(refreshTimer);
      await p.providers.close();
      await p.pool.close();
    },
  };
}
