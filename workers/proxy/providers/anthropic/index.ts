import type { ProviderAdapter } from '../types.ts';
import { anthropicAuth } from './auth.ts';
import { anthropicModels } from './models.ts';

export const anthropic: ProviderAdapter = { authHeaders: anthropicAuth, models: anthropicModels };
