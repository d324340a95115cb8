import { styleAAdapter } from '../openai-base/index.ts';
import type { ProviderAdapter } from '../types.ts';
import { llamacppModels, llamacppSlots } from './models.ts';

// llama-server serves styleA under /v1, the styleB messages API and a rerank endpoint beside it; its
// properties (GET /props) name the parallel slots that slot affinity uses.
const base = styleAAdapter(llamacppModels, {
  v1: (t) => `${t.baseUrl}/v1`,
  ops: ['chat.completions', 'embeddings', 'messages', 'messages.count_tokens', 'rerank'],
  streamUsage: true,
});

export const llamacpp: ProviderAdapter = { ...base, models: { ...base.models!, slots: llamacppSlots } };
