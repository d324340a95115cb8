import { styleAAdapter } from '../openai-base/index.ts';
import type { ProviderAdapter } from '../types.ts';
import { llamacppModels } from './models.ts';

export const llamacpp: ProviderAdapter = styleAAdapter(llamacppModels);
