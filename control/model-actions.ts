import { ServiceError } from '../protocol/errors.ts';
import { MODEL_ACTIONS, MODEL_ACTIONS_BY_KIND, type ImplementedModelAction } from '../protocol/actions.ts';
import type { CatalogModel, ProviderRecord } from '../protocol/catalog.ts';
import type { ModelActionResult } from '../protocol/http/runtime.ts';
import { toViews, type LoadProgress } from '../state/loaded-models.ts';
import type { ModelActionRunner } from '../protocol/ports/catalog.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { RuntimePool } from '../workers/runtime/runtime-pool.ts';
import type { Benchmarks } from './benchmarks.ts';
import type { CatalogService } from './catalog-service.ts';
import type { EventBus } from './events.ts';
import { answerJob, type Jobs } from './jobs.ts';
import { withArticle } from '../protocol/words.ts';

interface ModelActionDeps {
  catalog: CatalogService;
  runtime: RuntimePool;
  env: StoreEnv;
  audit: AuditRepo;
  jobs: Jobs;
  bus: EventBus;
  loadProgress?: LoadProgress;
  benchmarks?: Benchmarks;
}

type Target = { model: CatalogModel; provider: ProviderRecord; known: ImplementedModelAction };

/**
 * POST /v1/catalog/models/{id}/actions/{action}: the checks every kind shares (answered at once), then the
 * embedded runtime's work as a job: 202 with the job, or with `wait` the job's result (or its error) when it ends.
 */
export function modelActions(deps: ModelActionDeps): ModelActionRunner {
  return async (id, action, actor, requestId, wait, body) => {
    const target = actionTarget(deps, id, action);
    const { model, provider, known } = target;
    const job =
      known === 'benchmark'
        ? deps.benchmarks!.start(
            { modelId: model.id, providerId: provider.id, name: model.upstreamModelId },
            body,
            actor,
            requestId,
          )
        : deps.jobs.start({
            kind: known,
            subject: model.id,
            cancellable: known === 'load',
            run: ({ signal, progress }) => loadOrUnload(deps, target, known, { actor, requestId, signal, progress }),
          });
    return answerJob(deps.jobs, job, wait);
  };
}

/** The model an action names and the action its provider's kind has, or the error the client gets at once. */
function actionTarget(deps: ModelActionDeps, id: string, action: string): Target {
  const current = deps.catalog.current();
  // `embedded/<name>` names the same file as `embedded/<name>.gguf`, here as in the gateway.
  const suffixed = /\.gguf$/i.test(id) ? undefined : current.get(`${id}.gguf`);
  const model =
    current.get(id) ?? (suffixed && current.provider(suffixed.providerId)?.kind === 'embedded' ? suffixed : undefined);
  if (!model) throw new ServiceError('NOT_FOUND', `No catalog model with ID \`${id.slice(0, 200)}\`.`, { param: 'id' });
  if (!(MODEL_ACTIONS as readonly string[]).includes(action)) {
    throw new ServiceError('INVALID_REQUEST', `Model actions are ${MODEL_ACTIONS.join(', ')}.`, { param: 'action' });
  }
  const provider = current.provider(model.providerId);
  const kindActions: readonly ImplementedModelAction[] = provider ? MODEL_ACTIONS_BY_KIND[provider.kind] : [];
  const known = kindActions.find((a) => a === action);
  if (!provider || known === undefined) {
    throw new ServiceError(
      'INVALID_REQUEST',
      `${withArticle(provider?.kind ?? 'removed', true)} provider's models have no \`${action}\` action.`,
      { param: 'action' },
    );
  }
  if (known === 'benchmark' && !deps.benchmarks)
    throw new ServiceError('INVALID_REQUEST', 'This service runs no benchmarks.', { param: 'action' });
  return { model, provider, known };
}

/** A load or unload job's work: the runtime's answer, its audit entry and its event. */
async function loadOrUnload(
  deps: ModelActionDeps,
  { model, provider }: Target,
  op: 'load' | 'unload',
  job: {
    actor: Parameters<ModelActionRunner>[2];
    requestId: string;
    signal: AbortSignal;
    progress: (fraction: number) => void;
  },
): Promise<ModelActionResult> {
  // A model already loaded (or loading for a call) reports no progress: the job goes from 0 to 1.
  const stop = op === 'load' ? deps.loadProgress?.listen(model.upstreamModelId, job.progress) : undefined;
  const answer = await deps.runtime.control({ op, name: model.upstreamModelId }).finally(() => stop?.());
  const mine =
    toViews(
      answer.loaded.filter((e) => e.name === model.upstreamModelId),
      deps.catalog,
    ).find((v) => v.modelId === model.id) ?? null;
  const result: ModelActionResult =
    op === 'load'
      ? { modelId: model.id, action: op, loaded: mine }
      : { modelId: model.id, action: op, loaded: null, wasLoaded: answer.unloaded ?? false };
  await deps.env.commit(() =>
    deps.audit.stageAppend({
      action: op === 'load' ? 'model.load' : 'model.unload',
      resourceType: 'model',
      resourceId: model.id,
      ...job.actor,
      requestId: job.requestId,
      metadata:
        op === 'load' ? { providerId: provider.id } : { providerId: provider.id, wasLoaded: result.wasLoaded ?? false },
    }),
  );
  if (op === 'load' && job.signal.aborted) {
    // A load cannot stop half way: cancelling it means the model does not stay loaded.
    await deps.runtime.control({ op: 'unload', name: model.upstreamModelId });
    deps.bus.publish('model.unloaded', { modelId: model.id, reason: 'cancelled' });
  } else if (op === 'load') deps.bus.publish('model.loaded', { modelId: model.id, loaded: mine });
  else if (result.wasLoaded) deps.bus.publish('model.unloaded', { modelId: model.id, reason: 'action' });
  return result;
}
