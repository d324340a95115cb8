import { readFileSync } from 'node:fs';
import type { EdgeName } from '../http/choose-edge.ts';
import { route, type RouteDef } from '../http/router.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  name: string;
  version: string;
};

// Public build metadata only: no paths, hosts, tokens or machine configuration.
export const VERSION_INFO = Object.freeze({ name: pkg.name, version: pkg.version, apiVersion: 'current' });

/** `edge` says which HTTP server runs (node:http where no native uWebSockets.js build loads; README says when). */
export function processRoutes(isDraining: () => boolean, edge: EdgeName): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/health',
      scope: 'public',
      handle: () => ({ body: { status: isDraining() ? 'draining' : 'ok', edge } }),
    }),
    route({ method: 'GET', path: '/version', scope: 'public', handle: () => ({ body: VERSION_INFO }) }),
  ];
}
