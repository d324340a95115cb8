import { isRecord } from '../../shared/shape.ts';
import {
  chatUsage,
  createCallLedger,
  hasUsageObject,
  mayHoldUsageObject,
  NO_TOKENS,
  parseJson,
  report,
  responsesUsage,
  type TokenCounts,
  type UsageCollector,
} from './report.ts';

// Operations whose answer carries a usage object and nothing else to count: embeddings (`prompt_tokens`,
// `total_tokens`) and image generation (gpt-image models report `input_tokens` / `output_tokens`; DALL-E
// reports nothing). A streamed image generation repeats the usage in its `image_generation.completed`
// event; partial-image events carry megabytes of base64 and no usage, so only events that can hold a
// usage object are parsed.

type UsageReader = (usage: Record<string, unknown>, withCost: boolean) => TokenCounts;

function usageOnly(read: UsageReader, withCost: boolean): UsageCollector {
  let tokens = NO_TOKENS;
  const take = (body: unknown): void => {
    if (isRecord(body) && isRecord(body.usage)) tokens = read(body.usage, withCost);
  };
  return {
    json: take,
    event(ev) {
      if (hasUsageObject(ev.data)) take(parseJson(ev.data));
    },
    mayRead: (block, noUsageObject = false) => !noUsageObject && mayHoldUsageObject(block),
    result: () => report(tokens, createCallLedger(), null),
  };
}

export const createEmbeddingsCollector = (withCost: boolean): UsageCollector => usageOnly(chatUsage, withCost);
export const createImagesCollector = (withCost: boolean): UsageCollector => usageOnly(responsesUsage, withCost);

/** Operations that are counted, not metered: nothing to read, still safe to feed. */
export function createUnmeteredCollector(): UsageCollector {
  return {
    json() {},
    event() {},
    mayRead: () => false,
    result: () => report(NO_TOKENS, createCallLedger(), null),
  };
}
