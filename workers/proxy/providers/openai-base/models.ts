import type { EndpointFamily } from '../../../../protocol/families.ts';
import type { UpstreamModel } from '../../../../protocol/providers.ts';
import { bearerAuth, joinUrl, requestHeaders } from '../request.ts';
import { hasName, numberOrNull, unexpectedShape } from '../shape.ts';
import { isRecord } from '../../../shared/shape.ts';
import type { ModelListAdapter } from '../types.ts';

// The styleA model list, `GET {baseUrl}/models` answering `{object: "list", data: [{id, object, created,
// owned_by}]}`, shared by every kind that speaks it. A kind supplies only what differs: its path and query,
// where the entries sit, and how one entry becomes a model.

export type StyleAEntry = Record<string, unknown> & { id: string };

export interface StyleAModelsOptions {
  /** Below baseUrl, with its leading slash. */
  path?: string;
  query?: Readonly<Record<string, string>>;
  /** The list inside a body, or null when the body is not the documented shape. */
  entries?: (body: Record<string, unknown>) => unknown[] | null;
  toModel: (entry: StyleAEntry) => UpstreamModel;
}

/** `data`, with `object` either absent (OpenRouter, some local servers) or "list". */
export function dataEntries(body: Record<string, unknown>): unknown[] | null {
  if (!Array.isArray(body.data)) return null;
  if (body.object !== undefined && body.object !== 'list') return null;
  return body.data;
}

/** The fields every styleA entry carries; kinds that know more overwrite the rest. */
export function styleAModel(entry: StyleAEntry, families: EndpointFamily[]): UpstreamModel {
  return {
    upstreamModelId: entry.id,
    displayName: null,
    created: numberOrNull(entry.created),
    contextWindow: null,
    families,
  };
}

export function styleAModels(options: StyleAModelsOptions): ModelListAdapter {
  const path = options.path ?? '/models';
  const entries = options.entries ?? dataEntries;
  return {
    // The list is one page: styleA servers do not paginate /models.
    listRequest: (target, credential) => ({
      method: 'GET',
      url: joinUrl(target.baseUrl, path, options.query),
      headers: requestHeaders(target, bearerAuth(credential)),
    }),
    parseList(body) {
      const list = isRecord(body) ? entries(body) : null;
      if (list === null) throw unexpectedShape();
      return { models: list.filter((entry) => hasName(entry, 'id')).map(options.toModel), next: null };
    },
  };
}
