import type { EndpointFamily } from '../../../../protocol/families.ts';
import type { UpstreamModel } from '../../../../protocol/providers.ts';
import { joinUrl, requestHeaders } from '../request.ts';
import { hasName, secondsOf, stringOrNull, unexpectedShape } from '../shape.ts';
import { isRecord } from '../../../shared/shape.ts';
import type { ModelListAdapter } from '../types.ts';
import { anthropicAuth } from './auth.ts';

/** Every model Anthropic lists serves Messages; the API has no other generation family. */
export function anthropicFamilies(): EndpointFamily[] {
  return ['styleB.messages'];
}

// The API's maximum page size, so that most accounts need a single request.
const PAGE_LIMIT = '1000';

function toModel(entry: Record<string, unknown> & { id: string }): UpstreamModel {
  return {
    upstreamModelId: entry.id,
    displayName: stringOrNull(entry.display_name),
    created: secondsOf(entry.created_at),
    contextWindow: null,
    families: anthropicFamilies(),
  };
}

/** `GET /v1/models`, paged forward with `after_id` = the previous page's `last_id` while `has_more`. */
export const anthropicModels: ModelListAdapter = {
  listRequest: (target, credential, cursor) => ({
    method: 'GET',
    url: joinUrl(
      target.baseUrl,
      '/v1/models',
      cursor === null ? { limit: PAGE_LIMIT } : { limit: PAGE_LIMIT, after_id: cursor },
    ),
    headers: requestHeaders(target, anthropicAuth(credential)),
  }),
  parseList(body) {
    if (!isRecord(body)) throw unexpectedShape();
    const { data, has_more: hasMore, last_id: lastId } = body;
    if (!Array.isArray(data) || typeof hasMore !== 'boolean') throw unexpectedShape();
    if (lastId !== null && lastId !== undefined && typeof lastId !== 'string') throw unexpectedShape();
    let next: string | null = null;
    if (hasMore) {
      // A page that says there is more but names no cursor cannot be followed.
      if (typeof lastId !== 'string' || lastId === '') throw unexpectedShape();
      next = lastId;
    }
    return { models: data.filter((entry) => hasName(entry, 'id')).map(toModel), next };
  },
};
