import type { ProviderKind } from './providers.ts';

// Action identifiers of the service's resources (docs/api.md).
export const SERVICE_ACTIONS = ['start', 'stop', 'restart'] as const;
export const MODEL_ACTIONS = ['load', 'unload', 'benchmark', 'pull', 'delete-files'] as const;
export type ModelAction = (typeof MODEL_ACTIONS)[number];

/**
 * Which model actions each provider kind carries out today. GET /v1/capabilities lists only these (clients
 * trust it): an action of the vocabulary above that no kind implements yet is answered 400 and listed nowhere.
 */
export const MODEL_ACTIONS_BY_KIND = {
  openai: [],
  anthropic: [],
  openrouter: [],
  openai_compatible: [],
  ollama: [],
  llamacpp: [],
  embedded: ['load', 'unload', 'benchmark'],
} as const satisfies Record<ProviderKind, readonly ModelAction[]>;

/** An action some kind carries out (what the model-action route can be asked to do). */
export type ImplementedModelAction = (typeof MODEL_ACTIONS_BY_KIND)[ProviderKind][number];

/** The model actions some kind implements, in the vocabulary's order. */
export const IMPLEMENTED_MODEL_ACTIONS: readonly ModelAction[] = MODEL_ACTIONS.filter((a) =>
  Object.values(MODEL_ACTIONS_BY_KIND).some((actions: readonly ModelAction[]) => actions.includes(a)),
);

/** Every service action is carried out for the supervised llama-server services (/v1/services). */
export const IMPLEMENTED_SERVICE_ACTIONS: readonly (typeof SERVICE_ACTIONS)[number][] = SERVICE_ACTIONS;

/** Where local models can be pulled from, and which kinds use each: listed once a kind implements `pull`. */
export const REGISTRY_SOURCES = [
  { id: 'ollama', kinds: ['ollama'] },
  { id: 'huggingface', kinds: ['embedded', 'llamacpp'] },
] as const satisfies readonly { id: string; kinds: readonly ProviderKind[] }[];

export const AVAILABLE_REGISTRY_SOURCES = REGISTRY_SOURCES.filter((s) =>
  s.kinds.some((k) => (MODEL_ACTIONS_BY_KIND[k] as readonly ModelAction[]).includes('pull')),
);
