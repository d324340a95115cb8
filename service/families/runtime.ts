import { createLocalRuntime, type LocalRuntime } from '../../control/local-runtime.ts';
import { createRuntimeDiscovery } from '../../control/runtime-discovery.ts';
import { serviceActions } from '../../control/service-actions.ts';
import { hardwareRoutes } from '../../edge/routes/hardware.ts';
import { runtimeDiscoveryRoutes } from '../../edge/routes/runtime-discovery.ts';
import { placementRoutes } from '../../edge/routes/runtime-placement.ts';
import { residencyRoutes } from '../../edge/routes/runtime-residency.ts';
import { runtimeRoutes } from '../../edge/routes/runtime.ts';
import { serviceRoutes } from '../../edge/routes/services.ts';
import { createHardwareActor, type HardwareActor } from '../../workers/hardware/actor.ts';
import type { Built, Family } from '../family.ts';
import type { Base, LateParts } from '../parts.ts';
import type { EventsParts } from './events.ts';
import type { ProvidersParts } from './providers.ts';
import type { SettingsParts } from './settings.ts';
import type { StoreParts } from './store.ts';
import type { UsageParts } from './usage.ts';
import {
  RESIDENCY_METHODS,
  RUNTIME_DISCOVERY_METHODS,
  SERVICES_METHODS,
  type ResidencyPort,
  type RuntimeDiscoveryPort,
  type ServicesPort,
} from '../../protocol/ports/runtime.ts';

export interface RuntimeParts {
  hardware: HardwareActor;
  local: LocalRuntime;
}

/**
 * Local runtimes: the embedded llama.cpp runtime and its library of GGUF files, supervised llama-servers,
 * benchmarks and placement, and the hardware probe. Starts after the providers: it creates the `embedded`
 * provider on its first start.
 */
export async function runtimeFamily(
  p: Base & StoreParts & EventsParts & SettingsParts & UsageParts & ProvidersParts,
  late: Pick<LateParts, 'local'>,
): Promise<Built<RuntimeParts>> {
  const { dataDir, env, audit, bus, jobs, log } = p;
  const hardware = createHardwareActor({ log });
  // Bound before its start: that creates the `embedded` provider, whose model list the providers read from it.
  const local = late.local.bind(
    createLocalRuntime({
      dataDir,
      env,
      audit,
      bus,
      jobs,
      log,
      settings: () => p.settings.current(),
      catalog: () => p.catalog,
      providers: () => p.providers,
      ownPort: () => p.boundPort(),
      hardware,
      metrics: p.metrics.scheduler,
    }),
  );
  const { library, services, runtimePool } = local;
  const close = async () => {
    await runtimePool.close();
    library.close();
    await services.close();
    await hardware.close();
  };
  try {
    p.followSettings(() => library.reconfigure());
    // After the settings exist: listing the library reads the models directory from them.
    await local.start();
  } catch (err) {
    await close();
    throw err;
  }
  const family: Family = {
    routes: () => [
      ...hardwareRoutes(hardware),
      ...runtimeRoutes({ library, runtime: runtimePool, catalog: p.catalog, residency: local.residency }),
      ...residencyRoutes(p.control.port<ResidencyPort>('residency', local.residency.port, RESIDENCY_METHODS)),
      ...placementRoutes({
        library,
        catalog: p.catalog,
        hardware,
        modelsDirectory: local.modelsDirectory,
        tuning: local.tuning,
        benchmarks: local.benchmarks,
      }),
      ...runtimeDiscoveryRoutes(
        p.control.port<RuntimeDiscoveryPort>(
          'runtime-discovery',
          createRuntimeDiscovery({ providers: () => p.providerStore.all() }),
          RUNTIME_DISCOVERY_METHODS,
        ),
      ),
      ...serviceRoutes(
        p.control.port<ServicesPort>('services', services, SERVICES_METHODS),
        serviceActions(services, jobs),
      ),
    ],
    // The embedded runtime's calls end with the gateway's (family.ts); its close then waits for the same close.
    cut: () => runtimePool.close(),
    close,
  };
  return { family, parts: { hardware, local } };
}
