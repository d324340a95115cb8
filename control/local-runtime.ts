import type { Logger } from 'pino';
import type { SchedulerMetrics } from '../metrics/scheduler.ts';
import type { HardwareTelemetry } from '../protocol/http/hardware.ts';
import type { StoredSettings } from '../protocol/http/settings.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import { benchmarkRepo } from '../store/benchmark-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import { serviceRepo } from '../store/service-repo.ts';
import { followLibrary, type EmbeddedBootstrapProviders } from '../workers/runtime/bootstrap.ts';
import { listEmbeddedModels, resolveModelPath } from '../workers/runtime/library.ts';
import { createModelLibrary } from '../workers/runtime/library-watch.ts';
import { createRuntimePool, defaultModelsDirectory } from '../workers/runtime/runtime-pool.ts';
import { createLoadProgress, embeddedIdsOf } from '../state/loaded-models.ts';
import { createBenchmarks } from './benchmarks.ts';
import type { CatalogService } from './catalog-service.ts';
import type { EventBus } from './events.ts';
import type { Jobs } from './jobs.ts';
import { timingFromEnv } from './llama-server-process.ts';
import { createModelBytes } from './scheduler/model-bytes.ts';
import { createResidency } from './scheduler/residency.ts';
import { scheduledRuntime } from './scheduler/scheduled-runtime.ts';
import { createServices } from './services.ts';

// The local runtimes, as the composition root wires them: the embedded runtime's worker, the model library it
// reads (watched, so files dropped in show up), the benchmarks it runs, and the llama-server processes the
// service supervises. Settings, the catalog and the providers are read through getters at call time: they
// are built after this, and change underneath.

export interface LocalRuntimeDeps {
  dataDir: string;
  env: StoreEnv;
  audit: AuditRepo;
  bus: EventBus;
  jobs: Jobs;
  log: Logger;
  settings(): StoredSettings;
  catalog(): CatalogService;
  providers(): EmbeddedBootstrapProviders;
  /** The service's own listening port, once bound (a supervised llama-server must not take it). */
  ownPort(): number | null;
  /** The memory budget's figure when `runtime.memoryBudgetBytes` is null. */
  hardware: { telemetry(): Promise<HardwareTelemetry> };
  metrics?: SchedulerMetrics;
}

// Builds the parts in the order they read one another and hands them all back: no state of its own. The pool's
// event listener reads `library`, built after it, only once the first event comes.
export function createLocalRuntime({
  dataDir,
  env,
  audit,
  bus,
  jobs,
  log,
  settings,
  catalog,
  providers,
  ownPort,
  hardware,
  metrics,
}: LocalRuntimeDeps) {
  const modelsDirectory = () => settings().runtime.modelsDirectory ?? defaultModelsDirectory(dataDir);
  const tuning = () => settings().runtime.tuning;
  const loadProgress = createLoadProgress();
  const residency = createResidency({
    env,
    audit,
    bus,
    log,
    settings,
    catalog,
    hardware,
    ...(metrics && { metrics }),
    unloadEmbedded: async (name) => void (await pool.control({ op: 'unload', name })),
    // Through the scheduler: should the model have gone meanwhile, this load takes its room again.
    rearmEmbedded: async (name) => void (await runtimePool.control({ op: 'load', name })),
  });
  const pool = createRuntimePool({
    dataDir,
    modelsDirectory,
    tuning,
    keepAliveSeconds: (name) => (name === null ? settings().runtime.keepAliveSeconds : residency.keepAliveFor(name)),
    onEvent: (event) => {
      library.heard(event);
      if (event.t === 'loading') loadProgress.heard(event.name, event.progress);
      if (event.t === 'expired') {
        runtimePool.expiredEvent(event.name);
        for (const modelId of embeddedIdsOf(event.name, catalog()))
          bus.publish('model.unloaded', { modelId, reason: 'idle' });
      }
      if (event.t === 'loaded') {
        runtimePool.loadedEvent(event.name);
        for (const modelId of embeddedIdsOf(event.name, catalog()))
          bus.publish('model.loaded', { modelId, loaded: null, cause: 'call' });
      }
    },
    onWorkerLost: () => runtimePool.workerLost(),
    // A catalog model's `acceleration: {mode: "draft"}` names a model of the same provider; the runtime needs its file.
    draftFor(req) {
      const current = catalog().current();
      const acc =
        req.upstreamModelId === null ? null : current.get(`${req.target.id}/${req.upstreamModelId}`)?.acceleration;
      const draft = acc?.mode === 'draft' && acc.draftModelId !== null ? current.get(acc.draftModelId) : undefined;
      return draft ? { name: draft.upstreamModelId, modelId: draft.id } : null;
    },
    log,
  });
  const modelBytes = createModelBytes();
  // Every call and load of the embedded runtime takes its model's room in the budget first.
  const runtimePool = scheduledRuntime({
    pool,
    scheduler: residency.scheduler,
    async bytesOf(name) {
      await residency.probe();
      return modelBytes.of(resolveModelPath(modelsDirectory(), name), tuning());
    },
  });
  // Files dropped in or removed show up without a restart.
  const follower = followLibrary(providers, modelsDirectory, log);
  const library = createModelLibrary({ directory: modelsDirectory, log, onChange: follower.changed });
  const benchmarks = createBenchmarks({
    runtime: runtimePool,
    library,
    jobs,
    env,
    repo: benchmarkRepo(env),
    audit,
    tuning,
  });
  const services = createServices({
    env,
    repo: serviceRepo(env),
    audit,
    bus,
    library,
    modelsDirectory,
    tuning,
    embeddedLoaded: async () => (await runtimePool.loaded()).length,
    timing: timingFromEnv(process.env),
    processEnv: process.env,
    log,
    ownPort,
    async admit(serviceId, model, serviceTuning) {
      const bytes = await modelBytes.of(resolveModelPath(modelsDirectory(), model), serviceTuning);
      return residency.admitService(serviceId, bytes);
    },
  });

  return {
    modelsDirectory,
    tuning,
    loadProgress,
    runtimePool,
    residency,
    library,
    benchmarks,
    services,
    embeddedLister: listEmbeddedModels(modelsDirectory, library.verdicts),
    /** After the settings and the providers exist: the library reads its directory from them. */
    async start(): Promise<void> {
      await library.start();
      await services.boot();
      await follower.atStart();
    },
  };
}

export type LocalRuntime = ReturnType<typeof createLocalRuntime>;
