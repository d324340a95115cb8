import type { ProviderKind } from './providers.ts';

// Action identifiers of the service's resources (shared/spec/extensions.md).
export const SERVICE_ACTIONS = ['start', 'stop', 'restart'] as const;
export const MODEL_ACTIONS = ['load', 'unload', 'benchmark', 'pull', 'delete-files'] as const;
export type ModelAction = (typeof MODEL_ACTIONS)[number];

/** Which model actions each provider kind can carry out (the local runtimes manage their own models). */
export const MODEL_ACTIONS_BY_KIND = {
  openai: [],
  anthropic: [],
  openrouter: [],
  openai_compatible: [],
  ollama: ['load', 'unload', 'pull', 'delete-files'],
  llamacpp: ['load', 'unload', 'benchmark'],
  embedded: ['load', 'unload', 'benchmark', 'delete-files'],
} as const satisfies Record<ProviderKind, readonly ModelAction[]>;

/** Where local models can be pulled from, and which kinds use each. */
export const REGISTRY_SOURCES = [
  { id: 'ollama', kinds: ['ollama'] },
  { id: 'huggingface', kinds: ['embedded', 'llamacpp'] },
] as const satisfies readonly { id: string; kinds: readonly ProviderKind[] }[];
