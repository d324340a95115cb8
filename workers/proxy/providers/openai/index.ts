import { styleAAdapter } from '../openai-base/index.ts';
import type { ProviderAdapter } from '../types.ts';
import { openaiModels } from './models.ts';

export const openai: ProviderAdapter = styleAAdapter(openaiModels);
