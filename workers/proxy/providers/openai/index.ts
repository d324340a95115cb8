import { ALL_STYLE_A_OPS } from '../gateway-base.ts';
import { styleAAdapter } from '../openai-base/index.ts';
import type { ProviderAdapter } from '../types.ts';
import { openaiModels } from './models.ts';

export const openai: ProviderAdapter = styleAAdapter(openaiModels, {
  v1: (t) => t.baseUrl,
  ops: ALL_STYLE_A_OPS,
  streamUsage: true,
});
