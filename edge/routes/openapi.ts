import { buildOpenApi } from '../../protocol/openapi.ts';
import { route, type RouteDef } from '../http/router.ts';
import { VERSION_INFO } from './process.ts';

/**
 * Built and serialized once, on the first call, from the final route table, so it describes exactly the
 * service that is running. At the root as the contract names it, yet not public: it maps the whole API.
 */
export function openapiRoute(allRoutes: () => readonly RouteDef[]): RouteDef {
  let text: string | undefined;
  return route({
    method: 'GET',
    path: '/openapi.json',
    scope: 'read',
    handle: () => ({
      raw: (text ??= JSON.stringify(buildOpenApi(allRoutes(), { version: VERSION_INFO.version }))),
      // A fresh object each time: the edge adds its own headers to it.
      headers: { 'content-type': 'application/json' },
    }),
  });
}
