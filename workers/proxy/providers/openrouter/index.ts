import { styleAAdapter } from '../openai-base/index.ts';
import type { ProviderAdapter } from '../types.ts';
import { openrouterModels } from './models.ts';

export const openrouter: ProviderAdapter = styleAAdapter(openrouterModels);
