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
}

export interface LoadedRuntimeModelList {
  data: LoadedRuntimeModel[];
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
