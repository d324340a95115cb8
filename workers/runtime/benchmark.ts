import type { Token } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { BenchmarkControl, BenchmarkFigures, RuntimeConfig } from '../../protocol/runtime.ts';
import type { ModelManager } from './models.ts';

// The `benchmark` model action in the worker: a copy of the model loaded with the asked tuning, a prompt of
// N tokens evaluated at once, then M tokens generated one by one, each phase timed on its own. Progress:
// the load up to 0.5, the prompt to 0.6, the generation to 1.

const LOAD_SHARE = 0.5;
const PROMPT_SHARE = 0.1;
// Plain prose, so the tokenizer yields ordinary tokens; repeated until the prompt is long enough.
const FILLER = 'The quick brown fox jumps over the lazy dog while the river runs past the old mill. ';

const cancelled = () => new ServiceError('CONFLICT', 'The benchmark was cancelled.');

export async function runBenchmark(
  models: ModelManager,
  c: BenchmarkControl,
  config: RuntimeConfig,
  signal: AbortSignal,
  progress: (fraction: number) => void,
): Promise<BenchmarkFigures> {
  const started = performance.now();
  const loaded = await models.loadCopy(c.name, config, c.tuning, (p) => progress(p * LOAD_SHARE));
  try {
    const loadMs = Math.round(performance.now() - started);
    if (signal.aborted) throw cancelled();
    const lease = await loaded.acquire(signal);
    try {
      const { sequence } = lease;
      // One token more than the prompt: it starts the generation, so each generated token costs one step.
      const needed = c.promptTokens + 1;
      if (needed + c.generateTokens > sequence.contextSize) {
        throw new ServiceError(
          'INVALID_REQUEST',
          `promptTokens + generateTokens (${c.promptTokens + c.generateTokens}) must leave a token free in the ` +
            `context of ${sequence.contextSize}.`,
          {
            param: 'promptTokens',
            details: { contextSize: sequence.contextSize },
          },
        );
      }
      const tokens = promptTokens(loaded.model.tokenize.bind(loaded.model), needed);
      const promptStart = performance.now();
      await sequence.evaluateWithoutGeneratingNewTokens(tokens.slice(0, c.promptTokens));
      const promptMs = performance.now() - promptStart;
      progress(LOAD_SHARE + PROMPT_SHARE);
      if (signal.aborted) throw cancelled();

      let generated = 0;
      const genStart = performance.now();
      // End-of-generation tokens are generated like any other: the run measures speed, not an answer.
      for await (const _ of sequence.evaluate([tokens[c.promptTokens]!], { yieldEogToken: true })) {
        generated++;
        progress(LOAD_SHARE + PROMPT_SHARE + (1 - LOAD_SHARE - PROMPT_SHARE) * (generated / c.generateTokens));
        if (generated >= c.generateTokens || signal.aborted) break;
      }
      const genMs = performance.now() - genStart;
      if (signal.aborted) throw cancelled();
      return {
        promptTokens: c.promptTokens,
        generatedTokens: generated,
        promptTokensPerSecond: rate(c.promptTokens, promptMs),
        generationTokensPerSecond: rate(generated, genMs),
        loadMs,
      };
    } finally {
      lease.release();
    }
  } finally {
    loaded.retire();
  }
}

/** Exactly `count` tokens of ordinary text; the model's beginning-of-sequence token is not among them. */
function promptTokens(tokenize: (text: string) => Token[], count: number): Token[] {
  const unit = tokenize(FILLER);
  if (unit.length === 0)
    throw new ServiceError('INVALID_REQUEST', 'The model tokenizes text to nothing; it cannot be benchmarked.', {
      param: 'model',
    });
  const out: Token[] = [];
  while (out.length < count) out.push(...unit);
  return out.slice(0, count);
}

/** Tokens per second, rounded to 0.01; a phase too fast for the clock counts as 1 µs. */
function rate(tokens: number, ms: number): number {
  return Math.round((tokens / Math.max(ms, 0.001)) * 1000 * 100) / 100;
}
