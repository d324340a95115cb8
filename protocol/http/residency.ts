import { Type, type Static } from '@sinclair/typebox';
import { compile } from '../validate.ts';

// The local-model scheduler's view (docs/api.md, Local-model scheduler): what holds the memory budget and why,
// and the pins and keep-alives a person set per model. GET /v1/runtime/residency, PATCH /v1/runtime/residency/{id}.

/** Why a resident model is not evicted to make room: each reason on its own keeps it. */
export const WARM_REASONS = ['in_flight', 'session', 'pinned', 'loading', 'running'] as const;
export type WarmReasonView = (typeof WARM_REASONS)[number];

export interface ResidencyRow {
  /** The catalog IDs of the model (an embedded file listed by several providers has several). */
  modelIds: string[];
  /** `embedded`: a GGUF file in the embedded runtime; `llamacpp`: a running supervised llama-server. */
  runtime: 'embedded' | 'llamacpp';
  /** The library file or the service ID: what the scheduler counts once. */
  unit: string;
  state: 'loading' | 'resident' | 'evicting';
  /** The scheduler's estimate (weights, KV cache, compute buffers). */
  bytes: number;
  inFlight: number;
  pinned: boolean;
  /** Seconds a session keeps it warm; null = `runtime.keepAliveSeconds`. */
  keepAliveSeconds: number | null;
  /** Empty: cold, the first to go when a load needs room (coldest first). */
  warm: WarmReasonView[];
  /** Sessions that used it recently (their IDs are not shown). */
  sessions: number;
  lastUseAt: string;
  /** When its sessions' keep-alive ends, if nothing else keeps it warm; null otherwise. */
  coldAt: string | null;
}

export interface ResidencyMemory {
  budgetBytes: number;
  /**
   * `setting`: runtime.memoryBudgetBytes; `hardware`: the probe's GPU memory and RAM; `system`: Node's RAM
   * figure, before the probe answered.
   */
  budgetSource: 'setting' | 'hardware' | 'system';
  heldBytes: number;
  /** Loads waiting for memory now. */
  queued: number;
}

/** A model's settings as stored, also when it is not resident. */
export interface ModelPrefsView {
  modelId: string;
  pinned: boolean;
  keepAliveSeconds: number | null;
}

export interface ResidencyList {
  memory: ResidencyMemory;
  data: ResidencyRow[];
  /** Every model with a pin or a keep-alive of its own, resident or not. */
  prefs: ModelPrefsView[];
}

export const ResidencyPatchSchema = Type.Object(
  {
    pinned: Type.Optional(Type.Boolean()),
    // As runtime.keepAliveSeconds; null returns to it.
    keepAliveSeconds: Type.Optional(Type.Union([Type.Integer({ minimum: -1, maximum: 604_800 }), Type.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type ResidencyPatch = Static<typeof ResidencyPatchSchema>;
export const checkResidencyPatch = compile(ResidencyPatchSchema);
