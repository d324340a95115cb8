import { ServiceError } from '../protocol/errors.ts';
import { BENCHMARK_DEFAULTS, checkBenchmarkRequest, type BenchmarkResult } from '../protocol/http/runtime.ts';
import type { Tuning } from '../protocol/http/settings.ts';
import { checkBody } from '../protocol/validate.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { BenchmarkRepo } from '../store/benchmark-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import { unhealthyModelError } from '../workers/runtime/library.ts';
import type { ModelLibrary } from '../workers/runtime/library-watch.ts';
import { resolveTuning } from '../workers/runtime/placement.ts';
import type { RuntimePool } from '../workers/runtime/runtime-pool.ts';
import type { Actor } from './actor.ts';
import { auditedCrud } from './crud.ts';
import type { JobRecord, Jobs } from './jobs.ts';

// The `benchmark` model action: checks answered at once (body, file health, room in the context), then a job
// that has the runtime load its own copy of the model with the asked tuning and time a prompt and a
// generation. Benchmarks run one at a time (two would measure each other); finished results are kept in LMDB.

export interface BenchmarkDeps {
  runtime: RuntimePool;
  library: ModelLibrary;
  jobs: Jobs;
  env: StoreEnv;
  repo: BenchmarkRepo;
  audit: AuditRepo;
  /** runtime.tuning now: the request's fields go over it. */
  tuning(): Tuning;
}

export interface BenchmarkTarget {
  modelId: string;
  providerId: string;
  /** The library file name. */
  name: string;
}

export function createBenchmarks(deps: BenchmarkDeps) {
  // Each run waits for the one before it; a cancelled run that is still waiting never starts.
  let chain: Promise<unknown> = Promise.resolve();
  // A result is kept under its job, but audited as an action on the model it measured.
  const crud = auditedCrud({ env: deps.env, audit: deps.audit, resourceType: 'model' });

  return {
    start(target: BenchmarkTarget, rawBody: unknown, actor: Actor, requestId: string): JobRecord {
      const body = checkBody(checkBenchmarkRequest, rawBody ?? {});
      const tuning: Tuning = { ...deps.tuning(), ...body.tuning };
      const promptTokens = body.promptTokens ?? BENCHMARK_DEFAULTS.promptTokens;
      const generateTokens = body.generateTokens ?? BENCHMARK_DEFAULTS.generateTokens;
      const view = deps.library.lookup(target.name);
      if (view && view.health !== 'ok') throw unhealthyModelError(view.name, view.health, view.problem ?? view.health);
      // The worker checks again against the context it creates; this answers the plain case before a job exists.
      const { contextSize } = resolveTuning(tuning, view?.contextLength ?? null);
      if (promptTokens + generateTokens + 1 > contextSize) {
        throw new ServiceError(
          'INVALID_REQUEST',
          `promptTokens + generateTokens (${promptTokens + generateTokens}) must leave a token free in the context ` +
            `of ${contextSize}; raise tuning.contextSize or ask for fewer tokens.`,
          {
            param: 'promptTokens',
            details: { contextSize },
          },
        );
      }
      // The job runs from the next turn on, by when its ID is known: a result is kept under it.
      let jobId = '';
      const job = deps.jobs.start({
        kind: 'benchmark',
        subject: target.modelId,
        cancellable: true,
        run: ({ signal, progress }) => {
          const turn = chain.then(async (): Promise<BenchmarkResult> => {
            if (signal.aborted) throw new ServiceError('CONFLICT', 'The benchmark was cancelled.');
            const answer = await deps.runtime.control(
              { op: 'benchmark', name: target.name, tuning, promptTokens, generateTokens },
              { signal, progress },
            );
            const figures = answer.benchmark;
            if (!figures) throw new Error('the runtime answered a benchmark without figures');
            return { jobId, modelId: target.modelId, tuning, ...figures, at: new Date().toISOString() };
          });
          chain = turn.catch(() => undefined);
          return turn.then(async (kept) => {
            // Finished just as it was cancelled: the job is already `cancelled`, so its figures are not kept.
            if (signal.aborted) return kept;
            const metadata = {
              providerId: target.providerId,
              promptTokens: kept.promptTokens,
              generatedTokens: kept.generatedTokens,
            };
            await crud.commit(target.modelId, { action: 'model.benchmark', actor, requestId, metadata }, () =>
              deps.repo.stagePut(kept),
            );
            return kept;
          });
        },
      });
      jobId = job.id;
      return job;
    },

    list: deps.repo.list,
  };
}

export type Benchmarks = ReturnType<typeof createBenchmarks>;
