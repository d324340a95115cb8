import { availableParallelism } from 'node:os';
import {
  getLlama,
  LlamaLogLevel,
  resolveChatWrapper,
  type ChatWrapper,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaEmbeddingContext,
  type LlamaModel,
} from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { Tuning } from '../../protocol/http/settings.ts';
import type { RuntimeConfig } from '../../protocol/runtime.ts';
import { readGgufHeader } from './gguf-header.ts';
import { resolveModelPath } from './library.ts';
import { createProber } from './probe.ts';

// The loaded models of the runtime worker. A model is loaded on first use (after its header is judged
// and a throwaway process has loaded it once), with one context whose sequences serve concurrent calls;
// a call waits in a bounded queue when every sequence is busy.

/** Sequences per model when `tuning.parallel` is 0 (automatic). */
const DEFAULT_PARALLEL = 4;
/** Context per sequence when `tuning.contextSize` is 0: the model's own length, capped to keep memory small. */
const DEFAULT_CONTEXT = 4096;
/** Callers waiting for a sequence, per model, before OVERLOADED. */
const MAX_WAITING = 256;

export interface SequenceLease {
  sequence: LlamaContextSequence;
  release(): void;
}

export interface LoadedModel {
  name: string;
  model: LlamaModel;
  /** Resolved once per model: resolving (and checking a Jinja template) costs hundreds of milliseconds. */
  chatWrapper: ChatWrapper;
  acquire(signal: AbortSignal): Promise<SequenceLease>;
  /** Embeddings run on their own context, created on first use, one call at a time. */
  embed<T>(run: (context: LlamaEmbeddingContext) => Promise<T>): Promise<T>;
  dispose(): Promise<void>;
}

const threadsOf = (t: Tuning) => t.threads || Math.max(1, Math.floor(availableParallelism() / 2));

export function createModelManager() {
  const prober = createProber({ gpu: () => false });
  const loaded = new Map<string, Promise<LoadedModel>>();
  let llama: Promise<Llama> | null = null;
  let llamaGpu: boolean | null = null;

  function runtime(tuning: Tuning): Promise<Llama> {
    // gpuLayers 0 (automatic) stays on the CPU build: it needs no download and no driver. Any other
    // positive value asks node-llama-cpp for a GPU build it already has.
    const gpu = tuning.gpuLayers > 0;
    if (!llama || llamaGpu !== gpu) {
      llamaGpu = gpu;
      llama = getLlama({ gpu: gpu ? 'auto' : false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });
    }
    return llama;
  }

  async function load(name: string, path: string, tuning: Tuning): Promise<LoadedModel> {
    const header = await readGgufHeader(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'EISDIR') throw new ServiceError('MODEL_NOT_FOUND', `No embedded model named \`${name}\`.`, { param: 'model' });
      throw err;
    });
    if (header.health !== 'ok') {
      throw new ServiceError('UPSTREAM_ERROR', `The embedded model \`${name}\` cannot be loaded: ${header.health} (${header.problem}).`, {
        details: { health: header.health },
      });
    }
    // llama.cpp initialises while the probe runs: both take hundreds of milliseconds.
    const llamaReady = runtime(tuning);
    const verdict = await prober.probe(path);
    if (verdict !== 'loads') {
      throw new ServiceError('UPSTREAM_ERROR', `The embedded model \`${name}\` cannot be loaded: llama.cpp ${verdict === 'crashed' ? 'crashed on' : 'refused'} it.`, {
        details: { health: 'corrupt' },
      });
    }
    const llamaInstance = await llamaReady;
    const model = await llamaInstance.loadModel({ modelPath: path, ...(tuning.gpuLayers > 0 && { gpuLayers: tuning.gpuLayers }) });
    const parallel = tuning.parallel || DEFAULT_PARALLEL;
    const perSequence = tuning.contextSize || Math.min(model.trainContextSize, DEFAULT_CONTEXT);
    let context: LlamaContext;
    try {
      context = await model.createContext({
        sequences: parallel,
        contextSize: perSequence,
        threads: threadsOf(tuning),
        ...(tuning.batchSize > 0 && { batchSize: tuning.batchSize }),
      });
    } catch (err) {
      await model.dispose();
      throw new ServiceError('OVERLOADED', `Not enough memory for a context of \`${name}\`; lower runtime.tuning.contextSize or parallel.`, {
        details: { reason: err instanceof Error ? err.name : 'unknown' },
      });
    }
    const free: LlamaContextSequence[] = [];
    for (let i = 0; i < parallel; i++) free.push(context.getSequence());
    const waiting: { grant(s: LlamaContextSequence): void }[] = [];

    const lease = (sequence: LlamaContextSequence): SequenceLease => {
      let released = false;
      return {
        sequence,
        release() {
          if (released) return;
          released = true;
          const next = waiting.shift();
          if (next) next.grant(sequence);
          else free.push(sequence);
        },
      };
    };

    let embedding: Promise<LlamaEmbeddingContext> | null = null;
    let embedChain: Promise<unknown> = Promise.resolve();

    return {
      name,
      model,
      chatWrapper: resolveChatWrapper(model),
      acquire(signal) {
        const sequence = free.pop();
        if (sequence) return Promise.resolve(lease(sequence));
        if (waiting.length >= MAX_WAITING) {
          return Promise.reject(new ServiceError('OVERLOADED', `Every sequence of \`${name}\` is busy and the queue is full.`, { headers: { 'Retry-After': '1' } }));
        }
        return new Promise((resolvePromise, reject) => {
          const waiter = {
            grant: (s: LlamaContextSequence) => {
              signal.removeEventListener('abort', onAbort);
              resolvePromise(lease(s));
            },
          };
          const onAbort = () => {
            const at = waiting.indexOf(waiter);
            if (at >= 0) waiting.splice(at, 1);
            reject(new ServiceError('UPSTREAM_ERROR', 'The call was aborted while it waited.'));
          };
          signal.addEventListener('abort', onAbort, { once: true });
          waiting.push(waiter);
        });
      },
      embed(run) {
        embedding ??= model.createEmbeddingContext({ contextSize: Math.min(perSequence, 2048), threads: threadsOf(tuning) });
        const result = embedChain.then(async () => run(await embedding!));
        embedChain = result.catch(() => undefined);
        return result;
      },
      async dispose() {
        if (embedding) await (await embedding).dispose();
        await context.dispose();
        await model.dispose();
      },
    };
  }

  return {
    /** The loaded model `name`, loading it first; concurrent callers share one load. */
    get(name: string, config: RuntimeConfig): Promise<LoadedModel> {
      const path = resolveModelPath(config.modelsDirectory, name);
      let model = loaded.get(path);
      if (!model) {
        model = load(name, path, config.tuning);
        loaded.set(path, model);
        // A failed load is not remembered: the file may be fixed, and the probe verdict is cached anyway.
        model.catch(() => loaded.delete(path));
      }
      return model;
    },
    async close(): Promise<void> {
      const all = [...loaded.values()];
      loaded.clear();
      await Promise.allSettled(all.map(async (m) => (await m).dispose()));
    },
  };
}

export type ModelManager = ReturnType<typeof createModelManager>;
