import { readQuery } from '../../protocol/query.ts';
import { CONTENT_TYPE } from '../../protocol/metrics.ts';
import { route, type RouteDef } from '../http/router.ts';

// Prometheus scrapes with a bearer token like any client; `read` is enough, as for the usage routes.
export function metricsRoutes(render: () => string | Promise<string>): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/metrics',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        return { raw: await render(), headers: { 'content-type': CONTENT_TYPE } };
      },
    }),
  ];
}
