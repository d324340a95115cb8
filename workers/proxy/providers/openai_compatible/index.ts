import { styleAAdapter } from '../openai-base/index.ts';
import type { ProviderAdapter } from '../types.ts';
import { compatibleModels } from './models.ts';

// vLLM, LM Studio, MLX-LM and friends: chat, embeddings, the Responses API where they have it, and the
// Jina/Cohere-style rerank that vLLM serves at `<v1>/rerank`.
export const openaiCompatible: ProviderAdapter = styleAAdapter(compatibleModels, {
  v1: (t) => t.baseUrl,
  ops: [
    'chat.completions',
    'embeddings',
    'responses.create',
    'responses.get',
    'responses.delete',
    'responses.input_items',
    'responses.cancel',
    'rerank',
  ],
  streamUsage: true,
});
