import type { EndpointFamily } from './families.ts';

// The seven provider kinds (docs/api.md, Providers) and what each supports. Provider-specific behaviour
// lives in workers/proxy/providers/<kind>/; this table holds only the facts shared code and the
// capabilities document need.

export const PROVIDER_KINDS = [
  'openai',
  'anthropic',
  'openrouter',
  'openai_compatible',
  'ollama',
  'llamacpp',
  'embedded',
] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

export const PROVIDER_ACTIONS = ['test', 'refresh-models'] as const;
export type ProviderAction = (typeof PROVIDER_ACTIONS)[number];

export interface KindInfo {
  /** Hosted kinds default to their public URL; local kinds to their usual local address. */
  defaultBaseUrl: string | null;
  /** A hosted kind cannot serve a request without a stored credential. */
  credential: 'required' | 'optional' | 'none';
  /** Non-secret headers a record's `hints` (and a client, per request) may set, in canonical spelling. */
  hints: readonly string[];
  /** Families this kind can serve at all; a model of the kind advertises a subset. */
  families: readonly EndpointFamily[];
  actions: readonly ProviderAction[];
  /** Internal kinds serve the service itself and never appear in discovery. */
  internal: boolean;
  location: 'hosted' | 'local' | 'in_process';
}

const BOTH_ACTIONS = ['test', 'refresh-models'] as const;

export const KINDS = {
  openai: {
    defaultBaseUrl: 'https://api.openai.com/v1',
    credential: 'required',
    hints: ['OpenAI-Organization', 'OpenAI-Project'],
    families: [
      'styleA.chat_completions',
      'styleA.embeddings',
      'styleA.responses',
      'styleA.images',
      'styleA.audio_speech',
      'styleA.audio_transcriptions',
    ],
    actions: BOTH_ACTIONS,
    internal: false,
    location: 'hosted',
  },
  anthropic: {
    defaultBaseUrl: 'https://api.anthropic.com',
    credential: 'required',
    hints: ['anthropic-beta'],
    families: ['styleB.messages'],
    actions: BOTH_ACTIONS,
    internal: false,
    location: 'hosted',
  },
  openrouter: {
    defaultBaseUrl: 'https://openrouter.ai/api/v1',
    credential: 'required',
    hints: [
      'HTTP-Referer',
      'X-Title',
      'X-OpenRouter-Title',
      'X-OpenRouter-Categories',
      'X-OpenRouter-Experimental-Metadata',
    ],
    families: ['styleA.chat_completions', 'styleA.embeddings', 'styleA.responses'],
    actions: BOTH_ACTIONS,
    internal: false,
    location: 'hosted',
  },
  openai_compatible: {
    defaultBaseUrl: null,
    credential: 'optional',
    hints: [],
    families: ['styleA.chat_completions', 'styleA.embeddings', 'styleA.responses', 'rerank.documents'],
    actions: BOTH_ACTIONS,
    internal: false,
    location: 'local',
  },
  ollama: {
    defaultBaseUrl: 'http://127.0.0.1:11434',
    credential: 'optional',
    hints: [],
    families: ['styleA.chat_completions', 'styleA.embeddings', 'styleA.responses', 'styleB.messages'],
    actions: BOTH_ACTIONS,
    internal: false,
    location: 'local',
  },
  llamacpp: {
    defaultBaseUrl: 'http://127.0.0.1:8080',
    credential: 'optional',
    hints: [],
    families: ['styleA.chat_completions', 'styleA.embeddings', 'styleB.messages', 'rerank.documents'],
    actions: BOTH_ACTIONS,
    internal: false,
    location: 'local',
  },
  embedded: {
    defaultBaseUrl: null,
    credential: 'none',
    hints: [],
    families: [
      'styleA.chat_completions',
      'styleA.embeddings',
      'styleA.responses',
      'styleB.messages',
      'rerank.documents',
    ],
    actions: ['refresh-models'],
    internal: false,
    location: 'in_process',
  },
} as const satisfies Record<ProviderKind, KindInfo>;

export function isProviderKind(value: unknown): value is ProviderKind {
  return typeof value === 'string' && Object.hasOwn(KINDS, value);
}

export const PROVIDER_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Default time-outs: a non-streamed generation sends its head only when it is done, hence the long head. */
export const DEFAULT_TIMEOUTS = { connectMs: 10_000, headMs: 600_000, idleMs: 300_000 } as const;

/** A provider's list as the proxy worker hands it over. */
export interface UpstreamModelList {
  models: UpstreamModel[];
  /** Models left out because their ID or name held the provider's credential (an upstream echoing its key). */
  withheld: number;
  /** llama-server's parallel slots (`total_slots` of GET /props), when it said: what slot affinity spreads over. */
  slots?: number;
}

/** The most slots slot affinity uses (llama-server's `--parallel`); a larger `total_slots` counts as this. */
export const MAX_SLOTS = 256;

/** A model as an upstream reports it, before the catalog decides anything about it. */
export interface UpstreamModel {
  upstreamModelId: string;
  displayName: string | null;
  /** Seconds since the epoch, when the upstream says. */
  created: number | null;
  contextWindow: number | null;
  families: EndpointFamily[];
}

/**
 * The most models one provider's list may put in the catalog; the rest of a longer list is left out (first
 * ones kept, in the upstream's order) and the refresh says so. OpenRouter lists about 400 today; the bound
 * is what keeps a provider that lists without end (one whose list includes this catalog) from growing it.
 */
export const MAX_LISTED_MODELS = 2_000;

export interface ModelListCache {
  fetchedAt: number | null;
  models: UpstreamModel[];
  error: { code: string; message: string; at: number } | null;
  /** How many models the upstream listed, when known: more than `models` holds when the list was cut short. */
  listedCount?: number;
  /** How many listed models were left out because their ID or name held the provider's credential. */
  withheld?: number;
  /** llama-server's parallel slots, read with the list (UpstreamModelList). */
  slots?: number;
}

/** True when the provider listed more than MAX_LISTED_MODELS and the rest were left out. */
export function truncated(listing: ModelListCache): boolean {
  return listing.listedCount !== undefined && listing.listedCount > listing.models.length;
}
