import { gatewayFromLayout } from '../gateway-base.ts';
import type { ProviderAdapter } from '../types.ts';
import { anthropicAuth } from './auth.ts';
import { anthropicModels } from './models.ts';

export const anthropic: ProviderAdapter = {
  authHeaders: anthropicAuth,
  models: anthropicModels,
  // The record's baseUrl is the API root, without /v1 (as Anthropic's SDKs take it).
  gateway: gatewayFromLayout({
    v1: (t) => `${t.baseUrl}/v1`,
    ops: ['messages', 'messages.count_tokens'],
    streamUsage: false,
  }),
};
