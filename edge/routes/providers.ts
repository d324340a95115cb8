import { ServiceError } from '../../protocol/errors.ts';
import { checkProviderCreate, checkProviderUpdate } from '../../protocol/http/providers.ts';
import {
  KINDS,
  MAX_LISTED_MODELS,
  PROVIDER_ACTIONS,
  truncated,
  type ModelListCache,
  type ProviderAction,
} from '../../protocol/providers.ts';
import { actorOf, type Actor } from '../../protocol/actor.ts';
import { mayRedirectCredentials } from '../../protocol/credential-redirect.ts';
import type { CatalogReader } from '../../protocol/ports/catalog.ts';
import type { ProvidersPort } from '../../protocol/ports/providers.ts';
import { route, type RouteDef, type RouteResult } from '../http/router.ts';
import type { ModelRepo } from '../../store/model-repo.ts';
import { withArticle } from '../../protocol/words.ts';

/** What a list kept of what the upstream listed (refresh-models and GET .../models say the same). */
function listCounts(listing: ModelListCache) {
  return {
    truncated: truncated(listing),
    listedCount: listing.listedCount ?? listing.models.length,
    modelLimit: MAX_LISTED_MODELS,
    withheld: listing.withheld ?? 0,
  };
}

export function providerRoutes(providers: ProvidersPort, catalog: CatalogReader, models: ModelRepo): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/providers',
      scope: 'read',
      handle: async () => ({ body: { data: await providers.list() } }),
    }),
    route({
      method: 'POST',
      path: '/v1/providers',
      scope: 'manage',
      body: checkProviderCreate,
      handle: async ({ body, principal, requestId }) => ({
        status: 201,
        body: await providers.create(body, actorOf(principal), requestId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/providers/:id',
      scope: 'read',
      handle: async ({ params }) => ({ body: await providers.get(params.id!) }),
    }),
    route({
      method: 'PATCH',
      path: '/v1/providers/:id',
      scope: 'manage',
      body: checkProviderUpdate,
      handle: async ({ body, params, principal, requestId }) => ({
        body: await providers.update(
          params.id!,
          body,
          actorOf(principal),
          requestId,
          mayRedirectCredentials(principal),
        ),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/providers/:id',
      scope: 'manage',
      handle: async ({ params, principal, requestId }) => {
        await providers.remove(params.id!, actorOf(principal), requestId);
        return { body: { id: params.id, deleted: true } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/providers/:id/actions/:action',
      scope: 'manage',
      handle: ({ params, principal, requestId }) =>
        providerAction(providers, params.id!, params.action!, actorOf(principal), requestId),
    }),
    route({
      method: 'GET',
      path: '/v1/providers/:id/models',
      scope: 'read',
      handle: ({ params }) => modelList(providers, catalog, models, params.id!),
    }),
  ];
}

/** POST /v1/providers/{id}/actions/{action}: `test`, or `refresh-models`, where the provider's kind has it. */
async function providerAction(
  providers: ProvidersPort,
  id: string,
  actionName: string,
  actor: Actor,
  requestId: string,
): Promise<RouteResult> {
  const action = actionName as ProviderAction;
  const record = await providers.record(id);
  if (!record) throw new ServiceError('NOT_FOUND', `No provider with ID \`${id.slice(0, 100)}\`.`, { param: 'id' });
  if (!(PROVIDER_ACTIONS as readonly string[]).includes(action)) {
    throw new ServiceError('NOT_FOUND', `Unknown provider action \`${action.slice(0, 60)}\`; see /v1/capabilities.`, {
      param: 'action',
    });
  }
  if (!(KINDS[record.kind].actions as readonly string[]).includes(action)) {
    throw new ServiceError(
      'INVALID_REQUEST',
      `${withArticle(record.kind, true)} provider does not support \`${action}\`.`,
      {
        param: 'action',
      },
    );
  }
  if (action === 'test') return { body: await providers.test(id, actor, requestId) };
  const listing = await providers.refreshModels(id, actor, requestId);
  return {
    body: {
      id,
      modelCount: listing.models.length,
      fetchedAt: new Date(listing.fetchedAt!).toISOString(),
      ...listCounts(listing),
    },
  };
}

/** GET /v1/providers/{id}/models: the provider's last list, each model with its catalog entry. */
async function modelList(providers: ProvidersPort, catalog: CatalogReader, models: ModelRepo, id: string) {
  await providers.get(id); // 404 for an unknown provider
  const listing = models.listing(id);
  const current = catalog.current();
  const data = (listing?.models ?? []).map((m) => {
    const entry = current.get(`${id}/${m.upstreamModelId}`);
    return {
      upstreamModelId: m.upstreamModelId,
      displayName: m.displayName,
      families: m.families,
      contextWindow: m.contextWindow,
      catalog: entry ? { id: entry.id, source: entry.source, hidden: entry.hidden, families: entry.families } : null,
    };
  });
  return {
    body: {
      data,
      fetchedAt: listing?.fetchedAt ? new Date(listing.fetchedAt).toISOString() : null,
      ...listCounts(listing ?? { fetchedAt: null, models: [], error: null }),
      lastError: listing?.error
        ? {
            code: listing.error.code,
            message: listing.error.message,
            at: new Date(listing.error.at).toISOString(),
          }
        : null,
    },
  };
}
