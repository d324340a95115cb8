import type { EndpointFamily } from '../../../../protocol/families.ts';
import { styleAModel, type StyleAModelsOptions } from '../openai-base/index.ts';
import { countOrNull, idHas } from '../shape.ts';

/**
 * Local styleA servers (vLLM, LM Studio, MLX-LM) describe nothing but the ID, so the families come from it.
 * Rerankers first, so that a name mentioning both is not taken for an embedding model. Responses is left out
 * because few local servers implement it; a catalog record can add it.
 */
export function compatibleFamilies(id: string): EndpointFamily[] {
  if (idHas(id, 'rerank')) return ['rerank.documents'];
  if (idHas(id, 'embed')) return ['styleA.embeddings'];
  return ['styleA.chat_completions'];
}

export const compatibleModels: StyleAModelsOptions = {
  toModel: (entry) => ({
    ...styleAModel(entry, compatibleFamilies(entry.id)),
    // vLLM reports the context it serves as `max_model_len`; other servers leave it out.
    contextWindow: countOrNull(entry.max_model_len),
  }),
};
