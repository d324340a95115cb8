import { availableParallelism } from 'node:os';
import {
  DraftSequenceTokenPredictor,
  getLlama,
  LlamaLogLevel,
  resolveChatWrapper,
  type ChatWrapper,
  type Llama,
  type LlamaContext,
  type LlamaEmbeddingContext,
  type LlamaModel,
} from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { Tuning } from '../../protocol/http/settings.ts';
import type { LoadedEntry, RuntimeConfig, RuntimeEvent } from '../../protocol/runtime.ts';
import { readGgufHeader } from './gguf-header.ts';
import { keepAlive, realTimers, type KeepAlive, type Timers } from './keep-alive.ts';
import { resolveModelPath, unhealthyModelError } from './library.ts';
// DEFAULT_PARALLEL (sequences when `tuning.parallel` is 0) and DEFAULT_CONTEXT (the cap on the model's own
// length when `tuning.contextSize` is 0) live with the placement estimate, which must resolve them alike.
import { DEFAULT_CONTEXT, DEFAULT_PARALLEL } from './placement.ts';
import { createProber } from './probe.ts';
import { sequencePool, type SequenceLease, type SequencePool } from './sequences.ts';

// The loaded models of the runtime worker. A model is loaded on first use or by the `load` action (after its
// header is judged and a throwaway process has loaded it once), with one context whose sequences serve
// concurrent calls. An unloaded model leaves the list at once and is disposed when its last call ends; an idle
// one is unloaded when its keep-alive runs out (keep-alive.ts).

export type { SequenceLease } from './sequences.ts';

/** Tokens drafted ahead per step; node-llama-cpp's default. */
const DRAFT_MAX_TOKENS = 16;
/**
 * Tokens the target waits for the draft to propose per step. node-llama-cpp's default (0) never waits, so a
 * draft that is not much faster than its target proposes almost nothing; a small wait costs a small draft little.
 */
const DRAFT_MIN_TOKENS = 4;

export interface LoadedModel {
  name: string;
  model: LlamaModel;
  /** Resolved once per model: resolving (and checking a Jinja template) costs hundreds of milliseconds. */
  chatWrapper: ChatWrapper;
  acquire(signal: AbortSignal): Promise<SequenceLease>;
  /**
   * A sequence whose token predictor drafts with `draft` (speculative decoding). Such sequences live in a
   * context of their own per draft model, created on first use, so plain calls never pay for drafting.
   */
  acquireDrafted(draft: LoadedModel, signal: AbortSignal): Promise<SequenceLease>;
  /** Embeddings run on their own context, created on first use, one call at a time. */
  embed<T>(run: (context: LlamaEmbeddingContext) => Promise<T>): Promise<T>;
  info(): Omit<LoadedEntry, 'expiresAt'>;
  /** Dispose once nothing uses the model: no call, and no loaded model drafting with it. */
  retire(): void;
  /** A model drafting with this one keeps it in memory until that model is disposed. */
  pin(): () => void;
}

const threadsOf = (t: Tuning) => t.threads || Math.max(1, Math.floor(availableParallelism() / 2));

export interface ModelManagerOptions {
  /** What the edge hears: a file llama.cpp refused, a model unloaded by its keep-alive. */
  onEvent?(event: RuntimeEvent): void;
  timers?: Timers;
}

// A factory: one closure holds the instance's state and returns its methods, each short; hence its length.
export function createModelManager(options: ModelManagerOptions = {}) {
  /** Disposals under way: shutdown waits for them, since llama.cpp must not be cut off mid-way. */
  const disposals = new Set<Promise<void>>();
  const track = (disposal: Promise<void>): void => {
    const settled = disposal.catch(() => undefined);
    disposals.add(settled);
    void settled.finally(() => disposals.delete(settled));
  };
  const timers = options.timers ?? realTimers;
  const prober = createProber({ gpu: () => false });
  const loaded = new Map<string, Promise<LoadedModel>>();
  /** The subset of `loaded` whose load has finished: listing never waits for a load in progress. */
  const ready = new Map<string, LoadedModel>();
  const alive = new Map<string, KeepAlive>();
  let llama: Promise<Llama> | null = null;
  let llamaGpu: boolean | null = null;

  function runtime(tuning: Tuning): Promise<Llama> {
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
  }

  async function createContext(
    name: string,
    model: LlamaModel,
    tuning: Tuning,
    parallel: number,
    perSequence: number,
  ): Promise<LlamaContext> {
    try {
      return await model.createContext({
        sequences: parallel,
        contextSize: perSequence,
        threads: threadsOf(tuning),
        ...(tuning.batchSize > 0 && { batchSize: tuning.batchSize }),
      });
    } catch (err) {
      throw new ServiceError(
        'OVERLOADED',
        `Not enough memory for a context of \`${name}\`; lower runtime.tuning.contextSize or parallel.`,
        {
          details: { reason: err instanceof Error ? err.name : 'unknown' },
        },
      );
    }
  }

  /** `report` hears llama.cpp's load progress; by default the edge does, as a `loading` event for `name`. */
  async function load(
    name: string,
    path: string,
    tuning: Tuning,
    report?: (progress: number) => void,
  ): Promise<LoadedModel> {
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
    const llamaInstance = await llamaReady;
    let reported = 0;
    const onLoadProgress = (progress: number) => {
      // llama.cpp reports per tensor; the edge needs a few steps, not one message per tensor.
      if (progress <= reported || (progress - reported < 0.05 && progress < 1)) return;
      reported = progress;
      if (report) report(progress);
      else options.onEvent?.({ t: 'loading', name, progress });
    };
    const model = await llamaInstance.loadModel({
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

    let retired = false;
    let pins = 0;
    let disposed = false;
    const pools: SequencePool[] = [];
    const drafted = new Map<string, Promise<{ pool: SequencePool; dispose(): Promise<void> }>>();
    let embedding: Promise<LlamaEmbeddingContext> | null = null;
    let embedChain: Promise<unknown> = Promise.resolve();
    let embedCalls = 0;

    const idle = () => pins === 0 && embedCalls === 0 && pools.every((p) => p.busy() === 0);
    async function dispose(): Promise<void> {
      if (disposed) return;
      disposed = true;
      for (const pair of drafted.values()) await (await pair.catch(() => null))?.dispose();
      if (embedding) await (await embedding).dispose();
      await context.dispose();
      await model.dispose();
    }
    const maybeDispose = () => {
      if (retired && idle()) track(dispose());
    };
    const main = sequencePool(
      name,
      Array.from({ length: parallel }, () => context.getSequence()),
      maybeDispose,
    );
    pools.push(main);

    async function draftPair(draft: LoadedModel): Promise<{ pool: SequencePool; dispose(): Promise<void> }> {
      const unpin = draft.pin();
      try {
        const target = await createContext(name, model, tuning, parallel, perSequence);
        const draftContext = await createContext(draft.name, draft.model, tuning, parallel, perSequence).catch(
          async (err: unknown) => {
            await target.dispose();
            throw err;
          },
        );
        const sequences = Array.from({ length: parallel }, () =>
          target.getSequence({
            tokenPredictor: new DraftSequenceTokenPredictor(draftContext.getSequence(), {
              minTokens: DRAFT_MIN_TOKENS,
              maxTokens: DRAFT_MAX_TOKENS,
            }),
          }),
        );
        const pool = sequencePool(`${name} (draft ${draft.name})`, sequences, maybeDispose);
        pools.push(pool);
        return {
          pool,
          async dispose() {
            await target.dispose();
            await draftContext.dispose();
            unpin();
          },
        };
      } catch (err) {
        unpin();
        throw err;
      }
    }

    return {
      name,
      model,
      chatWrapper: resolveChatWrapper(model),
      acquire: (signal) => main.acquire(signal),
      async acquireDrafted(draft, signal) {
        let pair = drafted.get(draft.name);
        if (!pair) {
          pair = draftPair(draft);
          drafted.set(draft.name, pair);
          pair.catch(() => drafted.delete(draft.name));
        }
        return (await pair).pool.acquire(signal);
      },
      embed(run) {
        embedding ??= model.createEmbeddingContext({
          contextSize: Math.min(perSequence, 2048),
          threads: threadsOf(tuning),
        });
        embedCalls++;
        const result = embedChain.then(async () => run(await embedding!));
        embedChain = result.catch(() => undefined);
        void result
          .catch(() => undefined)
          .finally(() => {
            embedCalls--;
            maybeDispose();
          });
        return result;
      },
      info: () => ({
        name,
        contextSize: perSequence,
        sequences: parallel,
        memoryBytes: model.size + context.stateSize,
        placement: model.gpuLayers > 0 ? 'gpu' : 'cpu',
      }),
      retire() {
        retired = true;
        maybeDispose();
      },
      pin() {
        pins++;
        let done = false;
        return () => {
          if (done) return;
          done = true;
          pins--;
          maybeDispose();
        };
      },
    };
  }

  function entry(
    name: string,
    path: string,
    config: RuntimeConfig,
    byCall: boolean,
  ): { loading: Promise<LoadedModel>; alive: KeepAlive } {
    const current = loaded.get(path);
    if (current) return { loading: current, alive: alive.get(path)! };
    const loading = load(name, path, config.tuning);
    const clock = keepAlive(() => {
      if (loaded.get(path) !== loading) return;
      forget(path);
      void loading.then((m) => {
        m.retire();
        options.onEvent?.({ t: 'expired', name });
      });
    }, timers);
    loaded.set(path, loading);
    alive.set(path, clock);
    // A failed load is not remembered: the file may be fixed, and the probe verdict is cached anyway.
    loading.then(
      (m) => {
        if (loaded.get(path) !== loading) return;
        ready.set(path, m);
        if (byCall) options.onEvent?.({ t: 'loaded', name });
      },
      () => {
        if (loaded.get(path) === loading) forget(path);
      },
    );
    return { loading, alive: clock };
  }

  function forget(path: string): void {
    alive.get(path)?.cancel();
    alive.delete(path);
    loaded.delete(path);
    ready.delete(path);
  }

  return {
    /**
     * The loaded model `name`, loading it first (concurrent callers share one load), held until `release`:
     * the keep-alive clock runs only while no call holds the model.
     */
    async use(name: string, config: RuntimeConfig, byCall = true): Promise<{ model: LoadedModel; release(): void }> {
      const { loading, alive: clock } = entry(name, resolveModelPath(config.modelsDirectory, name), config, byCall);
      const release = clock.use(config.keepAliveSeconds);
      try {
        return { model: await loading, release };
      } catch (err) {
        release();
        throw err;
      }
    },
    /** Leaves the list now; memory is freed when the model's last call ends. False when it was not loaded. */
    async unload(name: string, config: RuntimeConfig): Promise<boolean> {
      const path = resolveModelPath(config.modelsDirectory, name);
      const model = loaded.get(path);
      if (!model) return false;
      forget(path);
      const m = await model.catch(() => null);
      m?.retire();
      return m !== null;
    },
    /**
     * A copy of model `name` loaded with `tuning`, outside the list and its keep-alive: a benchmark measures
     * exactly that tuning whatever is loaded. The caller retires it when done.
     */
    loadCopy(
      name: string,
      config: RuntimeConfig,
      tuning: Tuning,
      report: (progress: number) => void,
    ): Promise<LoadedModel> {
      return load(name, resolveModelPath(config.modelsDirectory, name), tuning, report);
    },
    /** Models whose load has finished, by name. */
    list(): LoadedEntry[] {
      return [...ready]
        .map(([path, m]) => {
          const at = alive.get(path)?.expiresAt() ?? null;
          return { ...m.info(), expiresAt: at === null ? null : new Date(at).toISOString() };
        })
        .sort((a, b) => a.name.localeCompare(b.name));
    },
    /** Retires every model and waits until each one in use ends and is disposed (bounded by the caller). */
    async close(): Promise<void> {
      const all = [...loaded.values()];
      for (const path of [...loaded.keys()]) forget(path);
      await Promise.allSettled(all.map(async (m) => (await m).retire()));
      while (disposals.size > 0) await Promise.allSettled([...disposals]);
    },
  };
}

export type ModelManager = ReturnType<typeof createModelManager>;
