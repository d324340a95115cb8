import { bearerAuth } from '../request.ts';
import { gatewayFromLayout } from '../gateway-base.ts';
import type { ProviderAdapter } from '../types.ts';
import { ollamaModels } from './models.ts';

export const ollama: ProviderAdapter = {
  authHeaders: bearerAuth,
  models: ollamaModels,
  // The daemon's OpenAI-compatible API under /v1, and its native Anthropic-compatible /v1/messages.
  gateway: gatewayFromLayout({
    v1: (t) => `${t.baseUrl}/v1`,
    ops: ['chat.completions', 'embeddings', 'responses.create', 'messages'],
    streamUsage: true,
  }),
};
