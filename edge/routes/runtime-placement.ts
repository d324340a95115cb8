import { ServiceError } from '../../protocol/errors.ts';
import type { HardwareTelemetry } from '../../protocol/http/hardware.ts';
import { checkPlacementRequest, type PlacementAnswer, type PlacementRequest } from '../../protocol/http/runtime.ts';
import type { Tuning } from '../../protocol/http/settings.ts';
import { readQuery } from '../../protocol/query.ts';
import { readGgufHeader } from '../../workers/runtime/gguf-header.ts';
import { resolveModelPath, unhealthyModelError } from '../../workers/runtime/library.ts';
import type { ModelLibrary } from '../../workers/runtime/library-watch.ts';
import { place } from '../../workers/runtime/placement.ts';
import type { CatalogReader } from '../../protocol/ports/catalog.ts';
import type { BenchmarksPort } from '../../protocol/ports/runtime.ts';
import { route, type RouteDef } from '../http/router.ts';

// POST /v1/runtime/placement (where a library model fits with a tuning, from its GGUF header and the hardware
// probe) and GET /v1/runtime/benchmarks (the kept results of `benchmark` actions). The header is read per
// request: a few MiB at most, never tensor data.

export interface PlacementRouteDeps {
  library: ModelLibrary;
  catalog: CatalogReader;
  hardware: { telemetry(): Promise<HardwareTelemetry> };
  modelsDirectory(): string;
  tuning(): Tuning;
  benchmarks: BenchmarksPort;
}

const MODEL_PARAM_MAX = 1024;

/** The library file a placement request names: an `embedded` catalog model, else a file of the library. */
async function libraryName(deps: PlacementRouteDeps, model: string): Promise<{ shown: string; name: string }> {
  const current = deps.catalog.current();
  const entry = current.get(model) ?? (/\.gguf$/i.test(model) ? undefined : current.get(`${model}.gguf`));
  if (entry) {
    if (current.provider(entry.providerId)?.kind !== 'embedded') {
      throw new ServiceError(
        'INVALID_REQUEST',
        `\`${model.slice(0, 200)}\` is not a model of an \`embedded\` provider; placement estimates the local ` +
          `runtime's models.`,
        { param: 'model' },
      );
    }
    return { shown: entry.id, name: entry.upstreamModelId };
  }
  const candidates = /\.gguf$/i.test(model) ? [model] : [model, `${model}.gguf`];
  const find = () => candidates.map((c) => deps.library.lookup(c)).find((v) => v !== undefined);
  // The last read may predate a file just dropped in where the directory cannot be watched.
  const view = find() ?? (await deps.library.read(), find());
  if (!view)
    throw new ServiceError('NOT_FOUND', `No embedded catalog model or library file named \`${model.slice(0, 200)}\`.`, {
      param: 'model',
    });
  return { shown: view.name, name: view.name };
}

export function placementRoutes(deps: PlacementRouteDeps): RouteDef[] {
  return [
    route({
      method: 'POST',
      path: '/v1/runtime/placement',
      scope: 'read',
      body: checkPlacementRequest,
      handle: async ({ req, body }) => {
        readQuery(req.query, []);
        return { body: await estimate(deps, body) };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/runtime/benchmarks',
      scope: 'read',
      handle: async ({ req }) => {
        const q = readQuery(req.query, ['model', 'limit', 'offset']);
        const filter = {
          modelId: q.string('model', MODEL_PARAM_MAX),
          limit: q.int('limit', 1, 200, 50),
          offset: q.int('offset', 0, 1_000_000, 0),
        };
        const { data, hasMore } = await deps.benchmarks.list(filter);
        return { body: { data, limit: filter.limit, offset: filter.offset, hasMore } };
      },
    }),
  ];
}

async function estimate(deps: PlacementRouteDeps, body: PlacementRequest): Promise<PlacementAnswer> {
  const { shown, name } = await libraryName(deps, body.model);
  const view = deps.library.lookup(name);
  // A file llama.cpp refused is unhealthy in the library although its header reads as whole.
  if (view && view.health !== 'ok') throw unhealthyModelError(view.name, view.health, view.problem ?? view.health);
  const header = await readGgufHeader(resolveModelPath(deps.modelsDirectory(), name)).catch(
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'EISDIR')
        throw new ServiceError('NOT_FOUND', `No library file named \`${name.slice(0, 200)}\`.`, { param: 'model' });
      throw err;
    },
  );
  if (header.health !== 'ok' || !header.layout || !header.architecture) {
    throw unhealthyModelError(
      name,
      header.health === 'ok' ? 'corrupt' : header.health,
      header.problem ?? 'its tensor table cannot be read',
    );
  }
  const settings = deps.tuning();
  const t = body.tuning ?? {};
  const telemetry = await deps.hardware.telemetry();
  const p = place(
    {
      architecture: header.architecture,
      embeddingLength: header.embeddingLength ?? 0,
      contextLength: header.contextLength,
      layout: header.layout,
    },
    {
      contextSize: t.contextSize ?? settings.contextSize,
      parallel: t.parallel ?? settings.parallel,
      batchSize: t.batchSize ?? settings.batchSize,
      gpuLayers: t.gpuLayers ?? settings.gpuLayers,
    },
    { ramAvailableBytes: telemetry.memory.availableBytes, gpus: telemetry.gpus, partial: telemetry.partial },
  );
  return {
    model: shown,
    fits: p.fits,
    gpuLayers: p.gpuLayers,
    memory: p.memory,
    available: p.available,
    tuning: p.resolved,
    confidence: p.confidence,
    reasons: p.reasons,
  };
}
