import type { EndpointFamily } from './families.ts';

// The gateway's operations: one per inference route (docs/api.md). The edge matches a route to
// an operation; each provider adapter maps an operation to its upstream URL.

export const GATEWAY_OPS = {
  'chat.completions': {
    family: 'styleA.chat_completions',
    method: 'POST',
    path: '/v1/chat/completions',
    body: 'json',
    metered: true,
  },
  embeddings: { family: 'styleA.embeddings', method: 'POST', path: '/v1/embeddings', body: 'json', metered: true },
  'responses.create': {
    family: 'styleA.responses',
    method: 'POST',
    path: '/v1/responses',
    body: 'json',
    metered: true,
  },
  'responses.input_tokens': {
    family: 'styleA.responses',
    method: 'POST',
    path: '/v1/responses/input_tokens',
    body: 'json',
    metered: false,
  },
  'responses.compact': {
    family: 'styleA.responses',
    method: 'POST',
    path: '/v1/responses/compact',
    body: 'json',
    metered: true,
  },
  'responses.get': {
    family: 'styleA.responses',
    method: 'GET',
    path: '/v1/responses/:id',
    body: 'none',
    metered: false,
  },
  'responses.delete': {
    family: 'styleA.responses',
    method: 'DELETE',
    path: '/v1/responses/:id',
    body: 'none',
    metered: false,
  },
  'responses.input_items': {
    family: 'styleA.responses',
    method: 'GET',
    path: '/v1/responses/:id/input_items',
    body: 'none',
    metered: false,
  },
  'responses.cancel': {
    family: 'styleA.responses',
    method: 'POST',
    path: '/v1/responses/:id/cancel',
    body: 'none',
    metered: false,
  },
  'images.generations': {
    family: 'styleA.images',
    method: 'POST',
    path: '/v1/images/generations',
    body: 'json',
    metered: true,
  },
  'images.edits': {
    family: 'styleA.images',
    method: 'POST',
    path: '/v1/images/edits',
    body: 'multipart',
    metered: false,
  },
  'audio.speech': {
    family: 'styleA.audio_speech',
    method: 'POST',
    path: '/v1/audio/speech',
    body: 'json',
    metered: false,
  },
  'audio.transcriptions': {
    family: 'styleA.audio_transcriptions',
    method: 'POST',
    path: '/v1/audio/transcriptions',
    body: 'multipart-or-json',
    metered: false,
  },
  messages: { family: 'styleB.messages', method: 'POST', path: '/v1/messages', body: 'json', metered: true },
  'messages.count_tokens': {
    family: 'styleB.messages',
    method: 'POST',
    path: '/v1/messages/count_tokens',
    body: 'json',
    metered: false,
  },
  rerank: { family: 'rerank.documents', method: 'POST', path: '/v1/rerank', body: 'json', metered: false },
} as const satisfies Record<
  string,
  {
    family: EndpointFamily;
    method: 'GET' | 'POST' | 'DELETE';
    path: string;
    body: 'json' | 'multipart' | 'multipart-or-json' | 'none';
    /** Token-metered (docs/api.md: speech, transcription, image edits and rerank are counted, not metered). */
    metered: boolean;
  }
>;

export type GatewayOp = keyof typeof GATEWAY_OPS;

/**
 * Bytes per token where the gateway has to estimate tokens: the input a call is reserved at under a limit, and
 * the usage of a call whose own never arrived (docs/api.md, Limits). JSON and text run about 4 bytes a token,
 * code fewer: 3 errs towards counting more.
 */
export const BYTES_PER_TOKEN_ESTIMATE = 3;

/**
 * Usage as the upstream reported it, ready for the meter. Token fields are null when the upstream did not
 * report them. Never prompt or response text, tool arguments or headers.
 */
export interface UsageReport {
  inputTokens: number | null;
  outputTokens: number | null;
  cachedInputTokens: number | null;
  /**
   * Of the input, written to a prompt cache (styleB cache_creation_input_tokens); absent where a protocol has
   * no such figure.
   */
  cacheWriteTokens?: number | null;
  /**
   * Of the cache writes, those with a 1-hour lifetime (styleB `cache_creation.ephemeral_1h_input_tokens`), billed
   * at their own price; the rest of cacheWriteTokens are 5-minute writes. Absent where not reported.
   */
  cacheWrite1hTokens?: number | null;
  reasoningTokens: number | null;
  totalTokens: number | null;
  /** What the upstream says the call cost (OpenRouter's `usage.cost`), in USD. */
  costUsd: number | null;
  /** Tool name -> number of calls the model made in this answer. */
  toolCalls: Record<string, number>;
  /**
   * Set when some token counts are the gateway's estimate, not the upstream's: the call ended before its usage
   * arrived, or the upstream reports none (workers/proxy/usage/estimate.ts).
   */
  estimated?: true;
}

export const EMPTY_USAGE: UsageReport = Object.freeze({
  inputTokens: null,
  outputTokens: null,
  cachedInputTokens: null,
  reasoningTokens: null,
  totalTokens: null,
  costUsd: null,
  toolCalls: {},
}) as UsageReport;

/** The Smart Route decision behind a call (set by route-pack resolution; absent for direct calls). */
export interface UsageRoute {
  packSlug: string;
  routeId: string;
  fallback: boolean;
  /** A reason code such as `rate_limited`; null when `fallback` is false. */
  fallbackReason: string | null;
  /**
   * The attempts that failed before this one, in order; absent when the first answered. Traces make a span of
   * each (control/traces/); the meter keeps none of it.
   */
  failed?: UsageAttempt[];
}

/** A route pack's attempt that failed before the first byte, so the pack moved on. */
export interface UsageAttempt {
  routeId: string;
  providerId: string;
  modelId: string;
  /** Milliseconds since the epoch. */
  startedAt: number;
  endedAt: number;
  /** The failure's error code (`UPSTREAM_RATE_LIMITED`, ...). */
  code: string;
}

/** Mode of a call that was not accelerated: such calls are the baseline a speedup is measured against. */
export const BASELINE_ACCELERATION_MODE = 'none';

/** How a local runtime generated the answer, when it reports it. */
export interface UsageAcceleration {
  /** `none` for plain generation (the baseline), otherwise the runtime's mode name (e.g. `draft`). */
  mode: string;
  draftModelId: string | null;
  /** Wall time spent generating the output tokens. */
  generationMs: number;
  /** Draft counters, only when the runtime reports them. */
  draftTokens?: number;
  acceptedDraftTokens?: number;
}

/** One relayed call's outcome and usage, for the meter (W1.4 stores only aggregates of these). */
export interface UsageEvent {
  kind: 'usage';
  requestId: string;
  /** Milliseconds since the epoch when the call ended. */
  at: number;
  tokenId: string;
  providerId: string;
  /** The resolved catalog model ID (`<providerId>/<upstreamModelId>`); null for calls addressed by response ID. */
  modelId: string | null;
  op: GatewayOp;
  outcome: 'ok' | 'failed' | 'aborted';
  usage: UsageReport | null;
  route?: UsageRoute;
  acceleration?: UsageAcceleration;
  /** The provider key that served the call (a CredentialRecord's ID); absent where the provider has none. */
  credentialId?: string;
  /** Milliseconds since the epoch when the gateway started relaying the call. */
  startedAt?: number;
  /** When the answer's head (or whole answer) came back; absent when none did. */
  firstByteAt?: number;
  /** The agent session the call names in its headers (edge/gateway/affinity-session.ts), bounded. */
  session?: string;
}
