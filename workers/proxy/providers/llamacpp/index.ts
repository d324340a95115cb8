import { styleAAdapter } from '../openai-base/index.ts';
import type { ProviderAdapter } from '../types.ts';
import { llamacppModels } from './models.ts';

// llama-server serves styleA under /v1, the styleB messages API and a rerank endpoint beside it.
export const llamacpp: ProviderAdapter = styleAAdapter(llamacppModels, {
  v1: (t) => `${t.baseUrl}/v1`,
  ops: ['chat.completions', 'embeddings', 'messages', 'messages.count_tokens', 'rerank'],
  streamUsage: true,
});
