import { readQuery } from '../../protocol/query.ts';
import type { HardwareActor } from '../../workers/hardware/actor.ts';
import { route, type RouteDef } from '../http/router.ts';

// Both answers come from the hardware actor, which never lets a probe hold a request longer than its
// time limit: GET reads the cached probe, POST reprobes (sharing a probe already running).
export function hardwareRoutes(actor: Pick<HardwareActor, 'telemetry' | 'refresh'>): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/hardware/telemetry',
      scope: 'read',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        return { body: await actor.telemetry() };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/hardware/refresh',
      scope: 'manage',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        return { body: await actor.refresh() };
      },
    }),
  ];
}
