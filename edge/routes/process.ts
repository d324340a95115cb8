import { readFileSync } from 'node:fs';
import { route, type RouteDef } from '../http/router.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string; version: string };

// Public build metadata only: no paths, hosts, tokens or machine configuration.
export const VERSION_INFO = Object.freeze({ name: pkg.name, version: pkg.version, apiVersion: 'current' });

export function processRoutes(isDraining: () => boolean): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/health',
      scope: 'public',
      handle: () => ({ body: { status: isDraining() ? 'draining' : 'ok' } }),
    }),
    route({ method: 'GET', path: '/version', scope: 'public', handle: () => ({ body: VERSION_INFO }) }),
  ];
}
