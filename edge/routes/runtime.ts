import type { RuntimeModelList } from '../../protocol/http/runtime.ts';
import { readQuery } from '../../protocol/query.ts';
import { listRuntimeModels } from '../../workers/runtime/library.ts';
import { route, type RouteDef } from '../router.ts';

// The model library as the runtime sees it. Headers are read per request (a few KiB to a few MiB per file,
// never tensor data), so a file dropped into the directory shows up at once with its health.
export function runtimeRoutes(deps: { modelsDirectory(): string }): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/runtime/models',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        const answer: RuntimeModelList = { data: await listRuntimeModels(deps.modelsDirectory()) };
        return { body: answer };
      },
    }),
  ];
}
