import { checkSettingsPatch } from '../../protocol/http/settings.ts';
import { actorOf } from '../../protocol/actor.ts';
import { route, type RouteDef } from '../http/router.ts';
import type { SettingsPort } from '../../protocol/ports/settings.ts';

export function settingsRoutes(settings: SettingsPort): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/settings',
      scope: 'read',
      handle: async () => ({ body: await settings.view() }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/settings',
      scope: 'manage',
      body: checkSettingsPatch,
      handle: async ({ body, principal, requestId }) => ({
        body: await settings.patch(body, actorOf(principal), requestId),
      }),
    }),
  ];
}
