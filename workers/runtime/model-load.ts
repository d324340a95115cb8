import { getLlama, LlamaLogLevel, type Llama, type LlamaContext } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { Tuning } from '../../protocol/http/settings.ts';
import type { RuntimeEvent } from '../../protocol/runtime.ts';
import { readGgufHeader } from './gguf-header.ts';
import { unhealthyModelError } from './library.ts';
import { loadedModel, type LoadedModel } from './loaded-model.ts';
import { createContext } from './model-context.ts';
// DEFAULT_PARALLEL (sequences when `tuning.parallel` is 0) and DEFAULT_CONTEXT (the cap on the model's own
// length when `tuning.contextSize` is 0) live with the placement estimate, which must resolve them alike.
import { DEFAULT_CONTEXT, DEFAULT_PARALLEL } from './placement.ts';
import { createProber } from './probe.ts';

// How the runtime worker loads a GGUF file (models.ts): its header judged, a throwaway process loading it once
// (probe.ts), then llama.cpp in this worker, and one context for its sequences.

export interface LoaderOptions {
  /** What the edge hears: a file llama.cpp refused, a model's load progress. */
  onEvent?(event: RuntimeEvent): void;
  /** Where a loaded model's disposal goes, so that shutdown waits for it. */
  track(disposal: Promise<void>): void;
}

export function createLoader(options: LoaderOptions) {
  const prober = createProber({ gpu: () => false });
  const runtime = llamaRuntime();

  /** Throws MODEL_NOT_FOUND, or the file's problem when its header or llama.cpp refuses it. */
  async function checked(name: string, path: string, tuning: Tuning): Promise<Llama> {
    const header = await readGgufHeader(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'EISDIR')
        throw new ServiceError('MODEL_NOT_FOUND', `No embedded model named \`${name}\`.`, { param: 'model' });
      throw err;
    });
    if (header.health !== 'ok') throw unhealthyModelError(name, header.health, header.problem ?? header.health);
    // llama.cpp initialises while the probe runs: both take hundreds of milliseconds.
    const llamaReady = runtime(tuning);
    const probed = await prober.probe(path);
    if (probed.verdict !== 'loads') {
      const problem =
        probed.verdict === 'crashed'
          ? 'llama.cpp crashed while loading it'
          : `llama.cpp refused it: ${probed.reason ?? 'no reason given'}`;
      // The header check passed, so only this verdict tells the library listing that the file is corrupt.
      options.onEvent?.({
        t: 'refused',
        name,
        sizeBytes: probed.sizeBytes,
        modifiedAt: new Date(probed.mtimeMs).toISOString(),
        problem,
      });
      throw unhealthyModelError(name, 'corrupt', problem);
    }
    return llamaReady;
  }

  /** `report` hears llama.cpp's load progress; by default the edge does, as a `loading` event for `name`. */
  return async function load(
    name: string,
    path: string,
    tuning: Tuning,
    report?: (progress: number) => void,
  ): Promise<LoadedModel> {
    const llama = await checked(name, path, tuning);
    let reported = 0;
    const onLoadProgress = (progress: number) => {
      // llama.cpp reports per tensor; the edge needs a few steps, not one message per tensor.
      if (progress <= reported || (progress - reported < 0.05 && progress < 1)) return;
      reported = progress;
      if (report) report(progress);
      else options.onEvent?.({ t: 'loading', name, progress });
    };
    const model = await llama.loadModel({
      modelPath: path,
      onLoadProgress,
      ...(tuning.gpuLayers > 0 && { gpuLayers: tuning.gpuLayers }),
    });
    const parallel = tuning.parallel || DEFAULT_PARALLEL;
    const perSequence = tuning.contextSize || Math.min(model.trainContextSize, DEFAULT_CONTEXT);
    let context: LlamaContext;
    try {
      context = await createContext(name, model, tuning, parallel, perSequence);
    } catch (err) {
      await model.dispose();
      throw err;
    }
    return loadedModel({ name, model, context, tuning, parallel, perSequence, track: options.track });
  };
}

/** llama.cpp itself, loaded once (again only when the GPU choice changes). */
function llamaRuntime(): (tuning: Tuning) => Promise<Llama> {
  let llama: Promise<Llama> | null = null;
  let llamaGpu: boolean | null = null;
  return (tuning) => {
    // gpuLayers 0 (automatic) stays on the CPU build: it needs no download and no driver. Any other
    // positive value asks node-llama-cpp for a GPU build it already has.
    const gpu = tuning.gpuLayers > 0;
    if (!llama || llamaGpu !== gpu) {
      llamaGpu = gpu;
      llama = getLlama({
        gpu: gpu ? 'auto' : false,
        build: 'never',
        logLevel: LlamaLogLevel.error,
        progressLogs: false,
      });
    }
    return llama;
  };
}
