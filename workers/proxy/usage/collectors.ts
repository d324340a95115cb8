import type { GatewayOp } from '../../../protocol/gateway.ts';
import type { ProviderKind } from '../../../protocol/providers.ts';
import { createChatCompletionsCollector } from './chat-completions.ts';
import { createMessagesCollector } from './messages.ts';
import type { UsageCollector } from './report.ts';
import { createResponsesCollector } from './responses.ts';
import { createEmbeddingsCollector, createImagesCollector, createUnmeteredCollector } from './simple.ts';

export type { SseFields, UsageCollector, UsageResult } from './report.ts';

// Usage of one answer, read from the upstream's own account of it, per operation. The table is exhaustive
// over the operations, so a new one does not compile until someone decides how it is metered.

/**
 * Kinds whose `usage.cost` is a documented price in USD (OpenRouter's, in credits of one dollar). Another
 * server's `cost` has no documented unit, and a wrong unit in the meter is worse than none.
 */
const COST_IN_USD = {
  openai: false,
  anthropic: false,
  openrouter: true,
  openai_compatible: false,
  ollama: false,
  llamacpp: false,
  embedded: false,
} as const satisfies Record<ProviderKind, boolean>;

const unmetered = (): UsageCollector => createUnmeteredCollector();

const COLLECTORS = {
  'chat.completions': createChatCompletionsCollector,
  embeddings: createEmbeddingsCollector,
  'responses.create': createResponsesCollector,
  'responses.input_tokens': unmetered,
  'responses.compact': createResponsesCollector,
  'responses.get': unmetered,
  'responses.delete': unmetered,
  'responses.input_items': unmetered,
  'responses.cancel': unmetered,
  'images.generations': createImagesCollector,
  'images.edits': unmetered,
  'audio.speech': unmetered,
  'audio.transcriptions': unmetered,
  messages: () => createMessagesCollector(),
  'messages.count_tokens': unmetered,
  rerank: unmetered,
} as const satisfies Record<GatewayOp, (withCost: boolean) => UsageCollector>;

export interface UsageCollectorOptions {
  /** Without it, a reported `usage.cost` is trusted (the caller did not say where the answer came from). */
  providerKind?: ProviderKind;
}

export function createUsageCollector(
  op: GatewayOp,
  options: UsageCollectorOptions = {},
): UsageCollector & { closed(): boolean } {
  const withCost = options.providerKind === undefined || COST_IN_USD[options.providerKind];
  const inner = COLLECTORS[op](withCost);
  // The readers check every shape they touch; this is the backstop that keeps a surprise in an upstream's
  // answer from failing a call the client has already been served. The meter then gets what was found.
  return {
    json(body) {
      try {
        inner.json(body);
      } catch {
        // keep what was found before
      }
    },
    event(ev) {
      try {
        inner.event(ev);
      } catch {
        // keep what was found before
      }
    },
    // A byte search that cannot throw, on the hot path: not wrapped.
    mayRead: inner.mayRead,
    closed: () => inner.closed?.() ?? false,
    result: () => inner.result(),
  };
}
