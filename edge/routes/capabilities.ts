import { buildCapabilities } from '../../protocol/capabilities.ts';
import { route, type RouteDef } from '../http/router.ts';

/** Built once from the final route table: the document describes exactly the service that is running. */
export function capabilitiesRoute(allRoutes: () => readonly RouteDef[]): RouteDef {
  let body: unknown;
  return route({
    method: 'GET',
    path: '/v1/capabilities',
    scope: ['inference', 'read'],
    handle: () => ({ body: (body ??= buildCapabilities(allRoutes())) }),
  });
}
