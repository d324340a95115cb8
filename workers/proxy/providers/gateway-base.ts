import { GATEWAY_OPS, type GatewayOp } from '../../../protocol/gateway.ts';
import { ServiceError } from '../../../protocol/errors.ts';
import { forwardedQuery } from './query.ts';
import type { GatewayAdapter, ProviderTarget } from './types.ts';

// Most kinds serve the contract's routes under a root that is either the record's baseUrl (kinds whose SDK
// takes the /v1 URL) or the server root plus /v1. An operation's upstream URL is then that root plus the
// route's own path below /v1, with path parameters encoded, and the query parameters the operation forwards
// (query.ts).

export interface GatewayLayout {
  /** The URL that corresponds to the contract's `/v1`. */
  v1(target: ProviderTarget): string;
  ops: readonly GatewayOp[];
  streamUsage: boolean;
  /** Where rerank lives, when it is not `<v1>/rerank`. */
  rerankUrl?(target: ProviderTarget): string;
}

function fill(path: string, params: Readonly<Record<string, string>>): string {
  return path.replace(/:([a-z_]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
}

export function gatewayFromLayout(layout: GatewayLayout): GatewayAdapter {
  const served = new Set(layout.ops);
  return {
    streamUsage: layout.streamUsage,
    url(op, target, params, query) {
      if (!served.has(op)) return null;
      const base =
        op === 'rerank' && layout.rerankUrl
          ? layout.rerankUrl(target)
          : layout.v1(target).replace(/\/+$/, '') + fill(GATEWAY_OPS[op].path.slice(3), params);
      const forwarded = forwardedQuery(op, query);
      return forwarded === '' ? base : `${base}?${forwarded}`;
    },
    normalize: served.has('rerank') ? normalizeRerank : undefined,
  };
}

interface RerankResult {
  index: number;
  relevance_score: number;
}

/**
 * The contract's rerank answer: `{object: "list", model, results: [{index, relevance_score}]}`, best first,
 * from whichever shape the upstream used (`results` or a bare array; `relevance_score` or `score`).
 */
export function normalizeRerank(op: GatewayOp, body: unknown, clientModel: string): unknown {
  if (op !== 'rerank') return body;
  const list = Array.isArray(body) ? body : (body as { results?: unknown } | null)?.results;
  if (!Array.isArray(list))
    throw new ServiceError('UPSTREAM_ERROR', 'The provider answered rerank in an unexpected shape.');
  const results: RerankResult[] = [];
  for (const entry of list as Record<string, unknown>[]) {
    const score = typeof entry?.relevance_score === 'number' ? entry.relevance_score : entry?.score;
    if (typeof entry?.index !== 'number' || typeof score !== 'number') {
      throw new ServiceError('UPSTREAM_ERROR', 'The provider answered rerank in an unexpected shape.');
    }
    results.push({ index: entry.index, relevance_score: score });
  }
  results.sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
  const usage = (body as { usage?: unknown } | null)?.usage;
  return { object: 'list', model: clientModel, results, ...(usage !== undefined && !Array.isArray(body) && { usage }) };
}

/** Every styleA operation, for kinds that serve the whole styleA surface. */
export const ALL_STYLE_A_OPS: readonly GatewayOp[] = [
  'chat.completions',
  'embeddings',
  'responses.create',
  'responses.input_tokens',
  'responses.compact',
  'responses.get',
  'responses.delete',
  'responses.input_items',
  'responses.cancel',
  'images.generations',
  'images.edits',
  'audio.speech',
  'audio.transcriptions',
];
