import { availableParallelism } from 'node:os';
import type { LlamaContext, LlamaModel } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { Tuning } from '../../protocol/http/settings.ts';

// A context of a loaded model (models.ts, loaded-model.ts): its sequences, each sequence's size and the threads.

export const threadsOf = (t: Tuning) => t.threads || Math.max(1, Math.floor(availableParallelism() / 2));

/** A context of `parallel` sequences of `perSequence` tokens; out of memory is OVERLOADED, naming the settings. */
export async function createContext(
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
