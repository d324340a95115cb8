import {
  DraftSequenceTokenPredictor,
  resolveChatWrapper,
  type ChatWrapper,
  type LlamaContext,
  type LlamaEmbeddingContext,
  type LlamaModel,
} from 'node-llama-cpp';
import type { Tuning } from '../../protocol/http/settings.ts';
import type { LoadedEntry } from '../../protocol/runtime.ts';
import { createContext, threadsOf } from './model-context.ts';
import { sequencePool, type SequenceLease, type SequencePool } from './sequences.ts';

// One loaded model of the runtime worker (models.ts): its context's sequences serve concurrent calls, a drafted
// context per draft model serves speculative decoding, and an embedding context serves embeddings one call at a
// time. Retired, it is disposed once nothing uses it.

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

/** A model llama.cpp loaded, with the context made for it. */
export interface OpenedModel {
  name: string;
  model: LlamaModel;
  context: LlamaContext;
  tuning: Tuning;
  /** Sequences per context. */
  parallel: number;
  /** Each sequence's context size. */
  perSequence: number;
  /** Where a disposal goes, so that shutdown waits for it (llama.cpp must not be cut off mid-way). */
  track(disposal: Promise<void>): void;
}

type DraftPair = { pool: SequencePool; dispose(): Promise<void> };

export function loadedModel(opened: OpenedModel): LoadedModel {
  const { name, model, context, tuning, parallel, perSequence } = opened;
  let retired = false;
  let pins = 0;
  let disposed = false;
  const pools: SequencePool[] = [];
  const drafted = new Map<string, Promise<DraftPair>>();
  const embeddings = embedder(model, Math.min(perSequence, 2048), threadsOf(tuning), () => maybeDispose());

  const idle = () => pins === 0 && embeddings.calls() === 0 && pools.every((p) => p.busy() === 0);
  async function dispose(): Promise<void> {
    if (disposed) return;
    disposed = true;
    for (const pair of drafted.values()) await (await pair.catch(() => null))?.dispose();
    await embeddings.dispose();
    await context.dispose();
    await model.dispose();
  }
  function maybeDispose(): void {
    if (retired && idle()) opened.track(dispose());
  }
  const main = sequencePool(
    name,
    Array.from({ length: parallel }, () => context.getSequence()),
    maybeDispose,
  );
  pools.push(main);

  return {
    name,
    model,
    chatWrapper: resolveChatWrapper(model),
    acquire: (signal) => main.acquire(signal),
    async acquireDrafted(draft, signal) {
      let pair = drafted.get(draft.name);
      if (!pair) {
        pair = draftPair(opened, draft, maybeDispose).then((p) => {
          pools.push(p.pool);
          return p;
        });
        drafted.set(draft.name, pair);
        pair.catch(() => drafted.delete(draft.name));
      }
      return (await pair).pool.acquire(signal);
    },
    embed: (run) => embeddings.run(run),
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

/** The target's context of sequences whose predictor drafts with `draft`; the draft is pinned while it lives. */
async function draftPair(opened: OpenedModel, draft: LoadedModel, onIdle: () => void): Promise<DraftPair> {
  const { name, model, tuning, parallel, perSequence } = opened;
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
    return {
      pool: sequencePool(`${name} (draft ${draft.name})`, sequences, onIdle),
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

/** Embeddings on a context of their own, created on first use, one call at a time; `onIdle` after each. */
function embedder(model: LlamaModel, contextSize: number, threads: number, onIdle: () => void) {
  let embedding: Promise<LlamaEmbeddingContext> | null = null;
  let chain: Promise<unknown> = Promise.resolve();
  let calls = 0;
  return {
    calls: () => calls,
    run<T>(run: (context: LlamaEmbeddingContext) => Promise<T>): Promise<T> {
      embedding ??= model.createEmbeddingContext({ contextSize, threads });
      calls++;
      const result = chain.then(async () => run(await embedding!));
      chain = result.catch(() => undefined);
      void result
        .catch(() => undefined)
        .finally(() => {
          calls--;
          onIdle();
        });
      return result;
    },
    async dispose() {
      if (embedding) await (await embedding).dispose();
    },
  };
}
