import { checkSettingsPatch } from '../../protocol/http/settings.ts';
import { actorOf } from '../actor.ts';
import { route, type RouteDef } from '../router.ts';
import type { SettingsService } from '../settings-service.ts';

export function settingsRoutes(settings: SettingsService): RouteDef[] {
  return [
    route({ method: 'GET', path: '/v1/settings', scope: 'read', handle: () => ({ body: settings.view() }) }),
    route({
      method: 'PATCH',
      path: '/v1/settings',
      scope: 'manage',
      body: checkSettingsPatch,
      handle: async ({ body, principal, requestId }) => ({ body: await settings.patch(body, actorOf(principal), requestId) }),
    }),
  ];
}
