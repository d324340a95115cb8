import {
  LlamaChat,
  TokenMeter,
  type ChatHistoryItem,
  type ChatModelFunctions,
  type LlamaChatResponse,
  type LlamaGrammar,
} from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';
import type { UsageAcceleration, UsageReport } from '../../protocol/gateway.ts';
import type { LoadedModel } from './models.ts';

// One generation on a leased sequence, shared by the styleA and styleB chat routes: the prompt is rendered
// with the model's chat template, and the usage and acceleration figures are measured the same way for both.

export interface GenerateParams {
  history: ChatHistoryItem[];
  maxTokens: number | null;
  temperature: number | undefined;
  topP: number | undefined;
  /** styleB's `top_k`; styleA has none. */
  topK?: number | undefined;
  seed: number | undefined;
  stop: string[];
  /** A forced tool call: the answer is generated under this grammar (workers/runtime/tools.ts). */
  grammar?: LlamaGrammar;
  /** Tools the model may call (tool_choice auto), through node-llama-cpp's function calling. */
  functions?: ChatModelFunctions;
}

export interface Generated {
  text: string;
  stopReason: LlamaChatResponse['metadata']['stopReason'];
  /** The custom stop string that ended the answer, when one did. */
  stopSequence: string | null;
  /** Calls the model made through node-llama-cpp's function calling (only when `functions` were given). */
  functionCalls: { name: string; params: unknown }[];
  usage: UsageReport;
  acceleration: UsageAcceleration;
}

export interface DraftModel {
  model: LoadedModel;
  /** The draft's catalog ID, for usage rows. */
  modelId: string;
}

export function usageOf(input: number, output: number): UsageReport {
  return {
    inputTokens: input,
    outputTokens: output,
    cachedInputTokens: null,
    reasoningTokens: null,
    totalTokens: input + output,
    costUsd: null,
    toolCalls: {},
  };
}

/**
 * The most tokens the answer may have: what the client asked for, capped by the room the prompt leaves in the
 * sequence, so an answer without `max_tokens` stops at the context (finish `length`) instead of asking
 * node-llama-cpp for a context shift, which throws once the prompt cannot be shortened. The rendered prompt
 * counts one token more than the sequence evaluates; that token is the margin that keeps the last one in.
 */
export function answerBudget(model: LoadedModel, params: GenerateParams, contextSize: number): number {
  const rendered = model.chatWrapper.generateContextState({
    chatHistory: params.history,
    ...(params.functions && { availableFunctions: params.functions }),
  });
  const promptTokens = rendered.contextText.tokenize(model.model.tokenizer).length;
  const room = contextSize - promptTokens;
  if (room < 1) {
    throw new ServiceError(
      'INVALID_REQUEST',
      `The prompt is ${promptTokens} tokens; \`${model.name.slice(0, 200)}\` has a context of ${contextSize} tokens ` +
        `per sequence (runtime.tuning.contextSize), which must also hold the answer. Shorten the messages or raise ` +
        `the context size.`,
      { param: 'messages', details: { contextSize, promptTokens } },
    );
  }
  return Math.min(params.maxTokens ?? room, room);
}

/**
 * Generates one answer. `onReady` runs once a sequence is leased (so a full queue still fails before a stream
 * head is sent); `onText` receives the answer as it is generated. Null when the call was aborted; `onStopped`
 * then receives the tokens evaluated and generated until the abort.
 */
export async function generate(
  model: LoadedModel,
  draft: DraftModel | null,
  params: GenerateParams,
  signal: AbortSignal,
  hooks: {
    onReady?(): void;
    onText?(text: string, inputTokens: number): void;
    onStopped?(usage: UsageReport): void;
  } = {},
): Promise<Generated | null> {
  const lease = draft ? await model.acquireDrafted(draft.model, signal) : await model.acquire(signal);
  const { sequence } = lease;
  const chat = new LlamaChat({ contextSequence: sequence, chatWrapper: model.chatWrapper, autoDisposeSequence: false });
  try {
    // Each call starts from an empty sequence, so the meter counts exactly this call's prompt.
    await sequence.clearHistory();
    // Before onReady: a prompt that does not fit is a 400, never a stream that breaks off.
    const maxTokens = answerBudget(model, params, sequence.contextSize);
    const before = sequence.tokenMeter.getState();
    const predictedBefore = { ...sequence.tokenPredictions };
    hooks.onReady?.();
    const startedAt = performance.now();
    const result = await chat.generateResponse(params.history, {
      maxTokens,
      ...(params.temperature !== undefined && { temperature: params.temperature }),
      ...(params.topP !== undefined && { topP: params.topP }),
      ...(params.topK !== undefined && { topK: params.topK }),
      ...(params.seed !== undefined && { seed: params.seed }),
      ...(params.stop.length > 0 && { customStopTriggers: params.stop }),
      ...(params.grammar !== undefined
        ? { grammar: params.grammar }
        : params.functions !== undefined
          ? { functions: params.functions }
          : {}),
      signal,
      stopOnAbortSignal: true,
      // The prompt has been evaluated before the first text arrives, so its token count is known by then.
      ...(hooks.onText && {
        onTextChunk: (text: string) =>
          hooks.onText!(text, TokenMeter.diff(sequence.tokenMeter, before).usedInputTokens),
      }),
    });
    // Prompt evaluation is included: it is part of the time a client waits, with or without a draft.
    const generationMs = Math.round((performance.now() - startedAt) * 1000) / 1000;
    const used = TokenMeter.diff(sequence.tokenMeter, before);
    if (signal.aborted) {
      hooks.onStopped?.(usageOf(used.usedInputTokens, used.usedOutputTokens));
      return null;
    }
    const predicted = sequence.tokenPredictions;
    const acceleration: UsageAcceleration = draft
      ? {
          mode: 'draft',
          draftModelId: draft.modelId,
          generationMs,
          draftTokens: predicted.validated + predicted.refuted - predictedBefore.validated - predictedBefore.refuted,
          acceptedDraftTokens: predicted.validated - predictedBefore.validated,
        }
      : { mode: 'none', draftModelId: null, generationMs };
    const trigger = result.metadata.stopReason === 'customStopTrigger' ? result.metadata.customStopTrigger : undefined;
    const stopSequence = trigger ? trigger.filter((t): t is string => typeof t === 'string').join('') : null;
    return {
      text: result.response,
      stopReason: result.metadata.stopReason,
      stopSequence,
      functionCalls: (result.functionCalls ?? []).map((c) => ({ name: c.functionName, params: c.params })),
      usage: usageOf(used.usedInputTokens, used.usedOutputTokens),
      acceleration,
    };
  } finally {
    chat.dispose({ disposeSequence: false });
    lease.release();
  }
}
