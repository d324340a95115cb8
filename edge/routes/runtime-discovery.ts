import { readQuery } from '../../protocol/query.ts';
import type { RuntimeDiscoveryPort } from '../../protocol/ports/runtime.ts';
import { route, type RouteDef } from '../http/router.ts';

// Discovery probes the network and runs binaries, so a poll reads the few-seconds cache; `refresh=true`
// probes again (sharing a probe already running).
export function runtimeDiscoveryRoutes(discovery: RuntimeDiscoveryPort): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/runtime/discovery',
      scope: 'read',
      handle: async ({ req }) => {
        const refresh = readQuery(req.query, ['refresh']).oneOf('refresh', ['true', 'false'] as const);
        return { body: await discovery.read(refresh === 'true') };
      },
    }),
  ];
}
