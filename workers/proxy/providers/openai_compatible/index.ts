import { styleAAdapter } from '../openai-base/index.ts';
import type { ProviderAdapter } from '../types.ts';
import { compatibleModels } from './models.ts';

export const openaiCompatible: ProviderAdapter = styleAAdapter(compatibleModels);
