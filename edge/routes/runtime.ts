import type { ResidencyMemory, ResidencyRow } from '../../protocol/http/residency.ts';
import type { LoadedRuntimeModelList, RuntimeModelList } from '../../protocol/http/runtime.ts';
import { readQuery } from '../../protocol/query.ts';
import { unhealthyModelError } from '../../workers/runtime/library.ts';
import type { ModelLibrary } from '../../workers/runtime/library-watch.ts';
import type { RuntimePool } from '../../workers/runtime/runtime-pool.ts';
import type { Catalog, ResolvedModel } from '../../protocol/catalog.ts';
import { toViews } from '../../state/loaded-models.ts';
import type { CatalogReader } from '../../protocol/ports/catalog.ts';
import { route, type RouteDef } from '../http/router.ts';

// The model library and the loaded models as the runtime sees them (the model actions the embedded runtime
// carries out are control/model-actions.ts). Headers are read per request (a few KiB to a few MiB per file,
// never tensor data), so a file dropped into the directory shows up at once with its health.

export interface RuntimeRouteDeps {
  library: ModelLibrary;
  runtime: RuntimePool;
  catalog: CatalogReader;
  /** The scheduler's reasons per model and its memory (control/scheduler/residency.ts). */
  residency?: { row(modelId: string): ResidencyRow | null; memory(): ResidencyMemory };
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
        const data = toViews(await deps.runtime.loaded(), deps.catalog);
        const { residency } = deps;
        const answer: LoadedRuntimeModelList =
          residency === undefined
            ? { data }
            : { data: data.map((m) => ({ ...m, resident: residency.row(m.modelId) })), memory: residency.memory() };
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
