import type { EndpointFamily } from '../../../../protocol/families.ts';
import { bearerAuth, joinUrl, requestHeaders } from '../request.ts';
import { hasName, idHas, unexpectedShape } from '../shape.ts';
import { isRecord } from '../../../shared/shape.ts';
import type { ModelListAdapter } from '../types.ts';

/**
 * Ollama's tags say nothing about what a model serves. Embedding models are named so (`nomic-embed-text`,
 * `mxbai-embed-large`) or are BERT-family encoders (`all-minilm`, `bge-m3`: family `bert`, `nomic-bert`,
 * `xlm-roberta`), which cannot generate. Everything else is served on Ollama's styleA and Messages routes.
 */
export function ollamaFamilies(name: string, architectures: readonly string[]): EndpointFamily[] {
  if (idHas(name, 'embed') || architectures.some((family) => idHas(family, 'bert'))) return ['styleA.embeddings'];
  return ['styleA.chat_completions', 'styleB.messages'];
}

function architecturesOf(details: unknown): string[] {
  if (!isRecord(details)) return [];
  const out = typeof details.family === 'string' ? [details.family] : [];
  if (Array.isArray(details.families)) for (const f of details.families) if (typeof f === 'string') out.push(f);
  return out;
}

/** `GET /api/tags`: `{models: [{name, model, modified_at, size, digest, details}]}`, never paged. */
export const ollamaModels: ModelListAdapter = {
  listRequest: (target, credential) => ({
    method: 'GET',
    url: joinUrl(target.baseUrl, '/api/tags'),
    // Ollama itself has no auth; a credential is for a daemon behind an authenticating proxy.
    headers: requestHeaders(target, bearerAuth(credential)),
  }),
  parseList(body) {
    if (!isRecord(body) || !Array.isArray(body.models)) throw unexpectedShape();
    const models = body.models
      .filter((entry) => hasName(entry, 'name'))
      .map((entry) => ({
        // The name with its tag (`llama3.2:latest`) is what Ollama's own routes take as `model`.
        upstreamModelId: entry.name,
        displayName: null,
        // `modified_at` is when the model was pulled, not when it was made.
        created: null,
        contextWindow: null,
        families: ollamaFamilies(entry.name, architecturesOf(entry.details)),
      }));
    return { models, next: null };
  },
};
