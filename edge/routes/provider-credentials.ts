import { actorOf } from '../../protocol/actor.ts';
import {
  checkCredentialCreate,
  checkCredentialUpdate,
  type CredentialPoolState,
  type CredentialView,
} from '../../protocol/http/providers.ts';
import type { ProvidersPort } from '../../protocol/ports/providers.ts';
import { route, type RouteDef } from '../http/router.ts';

// A provider's credentials (docs/api.md, Provider credentials): list, add, edit, remove. A key goes in and never
// comes out; what the key pool knows of each key now (headroom, cooldown, sessions) is added to what the
// control plane stores.

/**
 * `views` with the key pool's figures where it has any. A key a thread set aside shows as refused at once, before
 * the control plane's record of the refusal (which the thread reports) is written.
 */
async function withLive(providers: ProvidersPort, providerId: string, views: CredentialView[]) {
  const live: Map<string, CredentialPoolState> | undefined = await providers.livePool?.(providerId);
  if (live === undefined || live.size === 0) return views;
  return views.map((v): CredentialView => {
    const now = live.get(v.id);
    if (now === undefined) return v;
    const { refusedAt, ...figures } = now;
    const refused = !v.rejected && refusedAt !== null && { rejected: true, rejectedAt: refusedAt };
    return { ...v, ...figures, ...refused };
  });
}

export function providerCredentialRoutes(providers: ProvidersPort): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/providers/:id/credentials',
      scope: 'read',
      handle: async ({ params }) => {
        const id = params.id!;
        return { body: { data: await withLive(providers, id, await providers.listCredentials(id)) } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/providers/:id/credentials',
      scope: 'manage',
      body: checkCredentialCreate,
      handle: async ({ body, params, principal, requestId }) => {
        const id = params.id!;
        const added = await providers.addCredential(id, body, actorOf(principal), requestId);
        return { status: 201, body: (await withLive(providers, id, [added]))[0] };
      },
    }),
    route({
      method: 'PATCH',
      path: '/v1/providers/:id/credentials/:credId',
      scope: 'manage',
      body: checkCredentialUpdate,
      handle: async ({ body, params, principal, requestId }) => {
        const id = params.id!;
        const changed = await providers.updateCredential(id, params.credId!, body, actorOf(principal), requestId);
        return { body: (await withLive(providers, id, [changed]))[0] };
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/providers/:id/credentials/:credId',
      scope: 'manage',
      handle: async ({ params, principal, requestId }) => {
        await providers.removeCredential(params.id!, params.credId!, actorOf(principal), requestId);
        return { body: { id: params.credId, deleted: true } };
      },
    }),
  ];
}
