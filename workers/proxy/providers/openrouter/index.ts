import { styleAAdapter } from '../openai-base/index.ts';
import type { ProviderAdapter } from '../types.ts';
import { openrouterModels } from './models.ts';

// OpenRouter's OpenAI-compatible surface: chat, embeddings and the Responses API's create. It always ends a
// stream with usage (its docs: `stream_options.include_usage` has no effect), so nothing is injected.
export const openrouter: ProviderAdapter = styleAAdapter(openrouterModels, {
  v1: (t) => t.baseUrl,
  ops: ['chat.completions', 'embeddings', 'responses.create'],
  streamUsage: false,
});
