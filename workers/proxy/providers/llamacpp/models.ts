import type { EndpointFamily } from '../../../../protocol/families.ts';
import { MAX_SLOTS } from '../../../../protocol/providers.ts';
import { bearerAuth, joinUrl, requestHeaders } from '../request.ts';
import type { ModelListAdapter } from '../types.ts';
import { dataEntries, styleAModel, type StyleAModelsOptions } from '../openai-base/index.ts';
import { idHas } from '../shape.ts';
import { isRecord } from '../../../shared/shape.ts';

/**
 * llama-server serves Chat Completions and Anthropic-style Messages for every generative model; embedding and
 * reranking models are started with their own flags and named after what they are. Rerankers first, since
 * their names may also contain "embed".
 */
export function llamacppFamilies(id: string): EndpointFamily[] {
  if (idHas(id, 'rerank')) return ['rerank.documents'];
  if (idHas(id, 'embed')) return ['styleA.embeddings'];
  return ['styleA.chat_completions', 'styleB.messages'];
}

/**
 * llama-server answers the styleA `data` list and, in some versions, an Ollama-style `models` list beside it
 * (entries named by `model` / `name`). `data` wins; `models` alone is accepted too.
 */
function llamacppEntries(body: Record<string, unknown>): unknown[] | null {
  if (body.data !== undefined) return dataEntries(body);
  if (!Array.isArray(body.models)) return null;
  return body.models.map((entry) => {
    if (!isRecord(entry)) return entry;
    const id = typeof entry.model === 'string' && entry.model !== '' ? entry.model : entry.name;
    return { ...entry, id };
  });
}

export const llamacppModels: StyleAModelsOptions = {
  // The record's baseUrl is the server root, as for the spawned server the service supervises.
  path: '/v1/models',
  entries: llamacppEntries,
  toModel: (entry) => styleAModel(entry, llamacppFamilies(entry.id)),
};

/**
 * GET /props names the server's parallel slots (`total_slots`, its `--parallel`), which slot affinity spreads
 * sessions over (docs/api.md, Local runtimes: slot affinity). Anything but a whole number from 1 is no answer.
 */
export const llamacppSlots: NonNullable<ModelListAdapter['slots']> = {
  request: (target, credential) => ({
    method: 'GET',
    url: joinUrl(target.baseUrl, '/props'),
    headers: requestHeaders(target, bearerAuth(credential)),
  }),
  parse(body) {
    const n = isRecord(body) ? body.total_slots : undefined;
    return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? Math.min(n, MAX_SLOTS) : null;
  },
};
