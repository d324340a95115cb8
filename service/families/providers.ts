import { createCatalogService, type CatalogService } from '../../control/catalog-service.ts';
import { createProviderService, type ProviderService } from '../../control/provider-service.ts';
import { upgradeProviders } from '../../control/provider-upgrade.ts';
import { catalogRoutes } from '../../edge/routes/catalog.ts';
import { modelRoutes } from '../../edge/routes/models.ts';
import { providerRoutes } from '../../edge/routes/providers.ts';
import { providerCredentialRoutes } from '../../edge/routes/provider-credentials.ts';
import { modelActions } from '../../control/model-actions.ts';
import { LIVE_HEADERS_ACCOUNT_PREFIX } from '../../protocol/gauge-catalog.ts';
import { createProxyPool, type ProxyPool } from '../../workers/proxy/task-pool.ts';
import { createKeyPoolBuffer, createKeyPoolTable } from '../../state/key-pool-table.ts';
import { createKeyPool, type KeyPool } from '../../edge/gateway/key-pool.ts';
import { credentialLive } from '../../edge/gateway/key-live.ts';
import type { Built, Family } from '../family.ts';
import type { Base, LateParts } from '../parts.ts';
import type { EventsParts } from './events.ts';
import type { GaugeParts } from './gauge.ts';
import type { SettingsParts } from './settings.ts';
import type { StoreParts } from './store.ts';
import type { UsageParts } from './usage.ts';
import { PROVIDERS_METHODS, type ProvidersPort } from '../../protocol/ports/providers.ts';
import { CATALOG_METHODS, type CatalogCalls } from '../../protocol/ports/catalog.ts';

const MODEL_LIST_CHECK_MS = 60_000;

export interface ProvidersParts {
  pool: ProxyPool;
  catalog: CatalogService;
  providers: ProviderService;
  /** The shared table of keys' live headroom and of sessions (state/key-pool-table.ts), and this thread's pool. */
  keyPoolBuffer: SharedArrayBuffer;
  keyPool: KeyPool;
}

/**
 * Providers and the catalog. Model lists are fetched in the proxy pool on a timer and on provider changes, never on a
 * request.
 */
export async function providersFamily(
  p: Base & StoreParts & EventsParts & SettingsParts & GaugeParts & UsageParts,
  late: Pick<LateParts, 'catalog' | 'pool' | 'keyPool' | 'local' | 'smartRoute'>,
): Promise<Built<ProvidersParts>> {
  const { env, audit, log, vault, models, providerStore } = p;
  // Before the catalog and the providers read a record: each one holds a list of credentials from here on.
  const upgraded = await upgradeProviders({ env, providers: providerStore, audit });
  if (upgraded > 0) log.info({ providers: upgraded }, 'provider records upgraded to hold several credentials');
  const pool = late.pool.bind(createProxyPool({ dataDir: p.dataDir }));
  const keyPoolBuffer = createKeyPoolBuffer();
  const keyPool = late.keyPool.bind(
    createKeyPool({
      table: createKeyPoolTable(keyPoolBuffer),
      idleMs: () => p.settings.current().routing.sessionIdleMinutes * 60_000,
    }),
  );
  let catalog: CatalogService;
  let providers: ProviderService;
  try {
    catalog = late.catalog.bind(
      createCatalogService({
        env,
        models,
        audit,
        providers: () => providerStore.all(),
        prices: p.prices,
      }),
    );
    providers = createProviderService({
      env,
      providers: providerStore,
      models,
      audit,
      vault,
      // The library holds no credential to echo.
      lister: (target, ref) =>
        target.kind === 'embedded'
          ? late.local
              .get()
              .embeddedLister(target, ref)
              .then((listed) => ({ models: listed, withheld: 0 }))
          : pool.listModels(target, ref),
      onChange: (id, record, listing) => catalog.providerChanged(id, record, listing),
      log,
      bus: p.bus,
      live: (credential) => credentialLive(keyPool.live(credential.id), keyPool.refusedAt(credential)),
      // Read at each check: the listener is bound after this is built (port 0 picks one then).
      ownPort: () => p.boundPort(),
      forgetProvider: (id) => p.gaugeData.prepareRemoveAccount('live-headers', LIVE_HEADERS_ACCOUNT_PREFIX + id),
    });
  } catch (err) {
    await pool.close();
    throw err;
  }
  let refreshTimer: NodeJS.Timeout | undefined;
  const port = p.control.port<ProvidersPort>('providers', providers, PROVIDERS_METHODS);
  const family: Family = {
    routes: () => [
      ...providerRoutes(port, catalog, models),
      ...providerCredentialRoutes(port),
      ...catalogRoutes(
        p.control.port<CatalogCalls>('catalog', catalog, CATALOG_METHODS),
        modelActions({
          catalog,
          runtime: late.local.get().runtimePool,
          env,
          audit,
          jobs: p.jobs,
          bus: p.bus,
          loadProgress: late.local.get().loadProgress,
          benchmarks: late.local.get().benchmarks,
        }),
      ),
      ...modelRoutes(catalog, late.smartRoute.get().synthetic),
    ],
    ready() {
      providers.refreshStale();
      refreshTimer = setInterval(() => providers.refreshStale(), MODEL_LIST_CHECK_MS);
      refreshTimer.unref();
    },
    async close() {
      clearInterval(refreshTimer);
      await providers.close();
      await pool.close();
    },
  };
  return { family, parts: { pool, catalog, providers, keyPoolBuffer, keyPool } };
}
