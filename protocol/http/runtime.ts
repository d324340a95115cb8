import { Type, type Static } from '@sinclair/typebox';
import { compile } from '../validate.ts';
import type { Confidence } from './hardware.ts';
import type { ResidencyMemory, ResidencyRow } from './residency.ts';
import { TuningSchema, type Tuning } from './settings.ts';

// GET /v1/runtime/models: the GGUF files under `runtime.modelsDirectory`, judged from their headers.
// A model is named by its path relative to that directory; the directory itself never appears.

/** `partial`: declared tensor data runs past the end of the file (an interrupted download). */
export const RUNTIME_MODEL_HEALTH = ['ok', 'corrupt', 'unsupported', 'partial'] as const;
export type RuntimeModelHealth = (typeof RUNTIME_MODEL_HEALTH)[number];

export interface RuntimeModelView {
  /** Relative to the models directory, `/`-separated: `qwen/q4.gguf`. */
  name: string;
  health: RuntimeModelHealth;
  /** Why the model is not `ok`; never a path. */
  problem: string | null;
  sizeBytes: number;
  architecture: string | null;
  parameterCount: number | null;
  /** Quantization, e.g. `Q4_K_M`. */
  fileType: string | null;
  contextLength: number | null;
  modifiedAt: string;
}

export interface RuntimeModelList {
  data: RuntimeModelView[];
  /** Why the library is empty because its directory cannot be read (never a path); null otherwise. */
  problem: string | null;
}

// GET /v1/runtime/loaded: models resident in a runtime now, by catalog ID.
export interface LoadedRuntimeModel {
  modelId: string;
  runtime: 'embedded';
  /** Tokens per sequence. */
  contextSize: number;
  /** Parallel sequences of the model's context (concurrent calls it serves without queueing). */
  sequences: number;
  /** Weights plus context state, as llama.cpp reports them; absent when it does not. */
  memoryBytes?: number;
  placement: 'cpu' | 'gpu';
  /** When the keep-alive unloads the idle model; null while a call uses it or when kept forever (-1). */
  expiresAt: string | null;
  /** Why the scheduler keeps it (GET /v1/runtime/residency's row); null when it holds no room there. */
  resident?: ResidencyRow | null;
}

export interface LoadedRuntimeModelList {
  data: LoadedRuntimeModel[];
  /** The local-model scheduler's budget and what it holds. */
  memory?: ResidencyMemory;
}

/** The answer of a model action on an embedded model. */
export interface ModelActionResult {
  modelId: string;
  action: 'load' | 'unload';
  /** After `load`: the loaded model. After `unload`: null. */
  loaded: LoadedRuntimeModel | null;
  /** After `unload`: whether the model was loaded at all. */
  wasLoaded?: boolean;
}

// POST /v1/runtime/placement: where a library model fits with a tuning, estimated from its GGUF header and the
// hardware probe (workers/runtime/placement.ts). Tuning fields are runtime.tuning's; gpuLayers may also be
// `auto`, the most layers that fit on the GPU.
const tuningField = TuningSchema.properties;
export const PlacementRequestSchema = Type.Object(
  {
    /** A catalog ID of an `embedded` provider's model, or a library file name. */
    model: Type.String({ minLength: 1, maxLength: 1024 }),
    tuning: Type.Optional(
      Type.Object(
        {
          contextSize: Type.Optional(tuningField.contextSize),
          threads: Type.Optional(tuningField.threads),
          gpuLayers: Type.Optional(Type.Union([Type.Literal('auto'), tuningField.gpuLayers])),
          parallel: Type.Optional(tuningField.parallel),
          batchSize: Type.Optional(tuningField.batchSize),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type PlacementRequest = Static<typeof PlacementRequestSchema>;
export const checkPlacementRequest = compile(PlacementRequestSchema);

export interface PlacementAnswer {
  model: string;
  fits: boolean;
  /** `total` is the blocks plus the output layer, as llama.cpp counts offloadable layers. */
  gpuLayers: { requested: number | 'auto'; placed: number; total: number };
  memory: { weightsBytes: number; kvCacheBytes: number; computeBytes: number; gpuBytes: number; hostBytes: number };
  available: { gpuFreeBytes: number | null; ramFreeBytes: number | null };
  /** The tuning's automatic (0) figures as the runtime would resolve them. */
  tuning: { contextSize: number; parallel: number; batchSize: number };
  confidence: Confidence;
  reasons: string[];
}

// The `benchmark` model action's optional body. Bounds keep one run to minutes on a CPU, not hours.
export const BENCHMARK_DEFAULTS = { promptTokens: 512, generateTokens: 128 } as const;
export const BenchmarkRequestSchema = Type.Object(
  {
    tuning: Type.Optional(Type.Partial(TuningSchema, { additionalProperties: false })),
    promptTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 16_384 })),
    generateTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 4096 })),
  },
  { additionalProperties: false },
);
export type BenchmarkRequest = Static<typeof BenchmarkRequestSchema>;
export const checkBenchmarkRequest = compile(BenchmarkRequestSchema);

/** A benchmark job's result, kept and listed by GET /v1/runtime/benchmarks. */
export interface BenchmarkResult {
  jobId: string;
  modelId: string;
  /** runtime.tuning with the request's fields over it (0 = automatic, as in settings). */
  tuning: Tuning;
  promptTokensPerSecond: number;
  generationTokensPerSecond: number;
  promptTokens: number;
  generatedTokens: number;
  loadMs: number;
  at: string;
}
