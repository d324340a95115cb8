import { ServiceError } from '../../protocol/errors.ts';
import { MODEL_ACTIONS, MODEL_ACTIONS_BY_KIND, type ImplementedModelAction } from '../../protocol/actions.ts';
import type { LoadedRuntimeModelList, ModelActionResult, RuntimeModelList } from '../../protocol/http/runtime.ts';
import { readQuery } from '../../protocol/query.ts';
import type { AuditRepo } from '../../store/audit-repo.ts';
import type { StoreEnv } from '../../store/env.ts';
import { unhealthyModelError } from '../../workers/runtime/library.ts';
import type { ModelLibrary } from '../../workers/runtime/library-watch.ts';
import type { RuntimePool } from '../../workers/runtime/runtime-pool.ts';
import type { Actor } from '../../protocol/actor.ts';
import type { Catalog, ResolvedModel } from '../../protocol/catalog.ts';
import type { CatalogService } from '../../control/catalog-service.ts';
import type { EventBus } from '../../control/events.ts';
import type { Benchmarks } from '../../control/benchmarks.ts';
import { answerJob, type Jobs } from '../../control/jobs.ts';
import { toViews, type LoadProgress } from '../../protocol/loaded-models.ts';
import { route, type RouteDef } from '../http/router.ts';

// The model library and the loaded models as the runtime sees them, and the model actions the embedded
// runtime carries out. Headers are read per request (a few KiB to a few MiB per file, never tensor data),
// so a file dropped into the directory shows up at once with its health.

export interface RuntimeRouteDeps {
  library: ModelLibrary;
  runtime: RuntimePool;
  catalog: CatalogService;
}

export function runtimeRoutes(deps: RuntimeRouteDeps): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/runtime/models',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        const answer: RuntimeModelList = await deps.library.read();
        return { body: answer };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/runtime/loaded',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        const answer: LoadedRuntimeModelList = { data: toViews(await deps.runtime.loaded(), deps.catalog) };
        return { body: answer };
      },
    }),
  ];
}

/**
 * For a name the catalog cannot resolve, under an `embedded` provider: the same file with its `.gguf` suffix,
 * or, when the library holds the file but it is unhealthy, an error that says why (instead of "No model").
 */
export function embeddedFallback(library: ModelLibrary): (catalog: Catalog, name: string) => ResolvedModel | null {
  return (catalog, name) => {
    const slash = name.indexOf('/');
    if (slash <= 0 || catalog.provider(name.slice(0, slash))?.kind !== 'embedded') return null;
    const file = name.slice(slash + 1);
    const suffixed = /\.gguf$/i.test(file) ? file : `${file}.gguf`;
    if (suffixed !== file) {
      const resolved = catalog.resolve(`${name}.gguf`);
      if (resolved) return resolved;
    }
    const view = library.lookup(suffixed);
    if (view && view.health !== 'ok') throw unhealthyModelError(view.name, view.health, view.problem ?? view.health);
    library.missed();
    return null;
  };
}

/** `body` is the parsed request body of an action that reads one (`benchmark`), else undefined. */
export type ModelActionRunner = (id: string, action: string, actor: Actor, requestId: string, wait: boolean, body?: unknown) => Promise<{ status: number; body: unknown }>;

/**
 * POST /v1/catalog/models/{id}/actions/{action}: the checks every kind shares (answered at once), then the
 * embedded runtime's work as a job: 202 with the job, or with `wait` the job's result (or its error) when it ends.
 */
export function modelActions(deps: {
  catalog: CatalogService;
  runtime: RuntimePool;
  env: StoreEnv;
  audit: AuditRepo;
  jobs: Jobs;
  bus: EventBus;
  loadProgress?: LoadProgress;
  benchmarks?: Benchmarks;
}): ModelActionRunner {
  return async (id, action, actor, requestId, wait, body) => {
    const current = deps.catalog.current();
    // `embedded/<name>` names the same file as `embedded/<name>.gguf`, here as in the gateway.
    const suffixed = /\.gguf$/i.test(id) ? undefined : current.get(`${id}.gguf`);
    const model = current.get(id) ?? (suffixed && current.provider(suffixed.providerId)?.kind === 'embedded' ? suffixed : undefined);
    if (!model) throw new ServiceError('NOT_FOUND', `No catalog model with ID \`${id.slice(0, 200)}\`.`, { param: 'id' });
    if (!(MODEL_ACTIONS as readonly string[]).includes(action)) {
      throw new ServiceError('INVALID_REQUEST', `Model actions are ${MODEL_ACTIONS.join(', ')}.`, { param: 'action' });
    }
    const provider = deps.catalog.current().provider(model.providerId);
    const kindActions: readonly ImplementedModelAction[] = provider ? MODEL_ACTIONS_BY_KIND[provider.kind] : [];
    const known = kindActions.find((a) => a === action);
    if (!provider || known === undefined) {
      throw new ServiceError('INVALID_REQUEST', `A ${provider?.kind ?? 'removed'} provider's models have no \`${action}\` action.`, { param: 'action' });
    }
    if (known === 'benchmark' && !deps.benchmarks) throw new ServiceError('INVALID_REQUEST', 'This service runs no benchmarks.', { param: 'action' });
    const run = async (op: 'load' | 'unload', signal: AbortSignal, progress: (fraction: number) => void): Promise<ModelActionResult> => {
      // A model already loaded (or loading for a call) reports no progress: the job goes from 0 to 1.
      const stop = op === 'load' ? deps.loadProgress?.listen(model.upstreamModelId, progress) : undefined;
      const answer = await deps.runtime.control({ op, name: model.upstreamModelId }).finally(() => stop?.());
      const mine = toViews(answer.loaded.filter((e) => e.name === model.upstreamModelId), deps.catalog).find((v) => v.modelId === model.id) ?? null;
      const result: ModelActionResult =
        op === 'load' ? { modelId: model.id, action: op, loaded: mine } : { modelId: model.id, action: op, loaded: null, wasLoaded: answer.unloaded ?? false };
      await deps.env.commit(() =>
        deps.audit.stageAppend({
          action: action === 'load' ? 'model.load' : 'model.unload',
          resourceType: 'model',
          resourceId: model.id,
          ...actor,
          requestId,
          metadata: action === 'load' ? { providerId: provider.id } : { providerId: provider.id, wasLoaded: result.wasLoaded ?? false },
        }),
      );
      if (op === 'load' && signal.aborted) {
        // A load cannot stop half way: cancelling it means the model does not stay loaded.
        await deps.runtime.control({ op: 'unload', name: model.upstreamModelId });
        deps.bus.publish('model.unloaded', { modelId: model.id, reason: 'cancelled' });
      } else if (op === 'load') deps.bus.publish('model.loaded', { modelId: model.id, loaded: mine });
      else if (result.wasLoaded) deps.bus.publish('model.unloaded', { modelId: model.id, reason: 'action' });
      return result;
    };
    const job =
      known === 'benchmark'
        ? deps.benchmarks!.start({ modelId: model.id, providerId: provider.id, name: model.upstreamModelId }, body, actor, requestId)
        : deps.jobs.start({ kind: known, subject: model.id, cancellable: known === 'load', run: ({ signal, progress }) => run(known, signal, progress) });
    return answerJob(deps.jobs, job, wait);
  };
}
