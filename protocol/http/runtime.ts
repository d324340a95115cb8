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
}
