import { checkPresetCreate, checkPresetUpdate } from '../../protocol/http/presets.ts';
import { actorOf } from '../../protocol/actor.ts';
import type { PresetsPort } from '../../protocol/ports/smart-route.ts';
import { route, type RouteDef } from '../http/router.ts';

export function presetRoutes(presets: PresetsPort): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/presets',
      scope: 'read',
      handle: async () => ({ body: { data: await presets.list() } }),
    }),
    route({
      method: 'POST',
      path: '/v1/presets',
      scope: 'manage',
      body: checkPresetCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        body: await presets.create(body, actorOf(principal), requestId),
      }),
    }),
    // A static path wins over `/v1/presets/:slug`, so the service refuses `validate` as a slug.
    route({
      method: 'POST',
      path: '/v1/presets/validate',
      scope: 'manage',
      body: checkPresetCreate,
      handle: async ({ body }) => {
        await presets.validate(body);
        return { body: { valid: true } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/presets/:slug',
      scope: 'read',
      handle: async ({ params }) => ({ body: await presets.get(params.slug!) }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/presets/:slug',
      scope: 'manage',
      body: checkPresetUpdate,
      handle: async ({ body, params, principal, requestId }) => ({
        body: await presets.update(params.slug!, body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/presets/:slug',
      scope: 'manage',
      handle: async ({ params, principal, requestId }) => {
        await presets.remove(params.slug!, actorOf(principal), requestId);
        return { body: { slug: params.slug, deleted: true } };
      },
    }),
  ];
}
