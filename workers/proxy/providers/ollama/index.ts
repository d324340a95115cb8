import { bearerAuth } from '../request.ts';
import type { ProviderAdapter } from '../types.ts';
import { ollamaModels } from './models.ts';

export const ollama: ProviderAdapter = { authHeaders: bearerAuth, models: ollamaModels };
