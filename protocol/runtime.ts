import type { ErrorPayload } from './errors.ts';
import type { Tuning } from './http/settings.ts';
import type { LoadedRuntimeModel } from './http/runtime.ts';
import type { FromWorker, RelayRequest, ToWorker } from './relay.ts';

// The runtime worker speaks the relay protocol (protocol/relay.ts) with two additions: each start carries the
// settings it runs under, read at the moment the call starts, so a settings change needs no message of its own;
// and control calls (load, unload, list loaded models) multiplexed on the same port by their own id.

export interface RuntimeConfig {
  /** Absolute; the edge resolved `null` to `<dataDir>/models`. */
  modelsDirectory: string;
  tuning: Tuning;
  /** `runtime.keepAliveSeconds`: how long a model stays loaded after its last call; 0 = not at all, -1 = forever. */
  keepAliveSeconds: number;
}

/** Speculative decoding for one call: the draft model's library name and its catalog ID (for usage rows). */
export interface DraftChoice {
  name: string;
  modelId: string;
}

/** A loaded model as the worker knows it: by library name; the edge maps names to catalog IDs. */
export type LoadedEntry = Omit<LoadedRuntimeModel, 'modelId' | 'runtime'> & { name: string };

/** A benchmark loads its own copy of the model with `tuning`, apart from the loaded ones, and disposes it after. */
export interface BenchmarkControl {
  op: 'benchmark';
  name: string;
  tuning: Tuning;
  promptTokens: number;
  generateTokens: number;
}

/** What a benchmark measured; rates are tokens per second of wall time. */
export interface BenchmarkFigures {
  promptTokens: number;
  generatedTokens: number;
  promptTokensPerSecond: number;
  generationTokensPerSecond: number;
  loadMs: number;
}

export type RuntimeControl =
  | { op: 'load'; name: string }
  | { op: 'unload'; name: string }
  | { op: 'loaded' }
  | BenchmarkControl;

export type ToRuntime =
  | Exclude<ToWorker, { t: 'start' }>
  | { t: 'start'; id: number; req: RelayRequest; config: RuntimeConfig; draft: DraftChoice | null }
  | { t: 'control'; id: number; control: RuntimeControl; config: RuntimeConfig }
  /** Stops a control call that can stop (a benchmark); it then fails with CONFLICT. */
  | { t: 'cancel'; id: number }
  /** Shutdown: stop every call, dispose every model, then answer `closed` (the thread is stopped after). */
  | { t: 'close' };

/**
 * What the worker tells the edge unasked: llama.cpp refused a file whose header check passed (the library
 * listing marks that file version corrupt), a model was unloaded because its keep-alive ran out, or a
 * model's load advanced (llama.cpp's load progress, 0..1, in steps of at least 0.05; load jobs report it), or a
 * call loaded a model on first use (the `load` action reports its own loads).
 */
export type RuntimeEvent =
  | { t: 'refused'; name: string; sizeBytes: number; modifiedAt: string; problem: string }
  | { t: 'expired'; name: string }
  | { t: 'loading'; name: string; progress: number }
  | { t: 'loaded'; name: string };

export type FromRuntime =
  | FromWorker
  | RuntimeEvent
  /** `unloaded` says whether the model was loaded at all. */
  | { t: 'control'; id: number; ok: true; loaded: LoadedEntry[]; unloaded?: boolean; benchmark?: BenchmarkFigures }
  /** A running control call's progress, 0..1 (a benchmark's load, prompt and generation). */
  | { t: 'control-progress'; id: number; progress: number }
  | { t: 'control'; id: number; ok: false; error: ErrorPayload }
  /** Every model is disposed: llama.cpp has no work left that stopping the thread could cut. */
  | { t: 'closed' };

/** The worker's data at start. */
export interface RuntimeWorkerData {
  dataDir: string;
}
