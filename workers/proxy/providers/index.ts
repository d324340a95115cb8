import type { ProviderKind } from '../../../protocol/providers.ts';
import { anthropic } from './anthropic/index.ts';
import { embedded } from './embedded/index.ts';
import { llamacpp } from './llamacpp/index.ts';
import { ollama } from './ollama/index.ts';
import { openai } from './openai/index.ts';
import { openaiCompatible } from './openai_compatible/index.ts';
import { openrouter } from './openrouter/index.ts';
import type { ProviderAdapter } from './types.ts';

// Typed against every kind, so adding one to protocol/providers.ts fails to compile until it has an adapter.
export const ADAPTERS = {
  openai,
  anthropic,
  openrouter,
  openai_compatible: openaiCompatible,
  ollama,
  llamacpp,
  embedded,
} as const satisfies Record<ProviderKind, ProviderAdapter>;
