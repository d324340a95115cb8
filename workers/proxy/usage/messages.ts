import { isRecord } from '../../shared/shape.ts';
import { cacheCreationSplit, count } from '../../shared/usage-counts.ts';
import { createCallLedger, nameOf, report, type UsageCollector } from './report.ts';
import { createTypeFilter } from './sniff.ts';

// styleB Messages. Anthropic splits the prompt three ways: `input_tokens` (after the last cache breakpoint,
// excluding cached reads), `cache_creation_input_tokens` and `cache_read_input_tokens`. The report's
// inputTokens is their sum, the whole prompt, as styleA's `prompt_tokens` is (which includes its cached
// tokens), so one dashboard column means the same for every provider; cachedInputTokens is the cache
// read, the part billed at the discount; cacheWriteTokens is the cache creation, also inside inputTokens, kept
// apart because it is billed at a premium (protocol/pricing.ts prices each part once). Where the server splits
// the writes by lifetime (`cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}`), the
// 1-hour part is cacheWrite1hTokens (a dearer price), and the split's sum stands in for a missing total.
// A stream opens with `message_start` (the prompt's usage and a first output count); each `message_delta`
// carries cumulative counts, so the last value of every field wins, input fields included when a server
// repeats them there. Tool calls are content blocks whose type ends in `tool_use` (tool_use,
// server_tool_use, mcp_tool_use), announced in a stream by `content_block_start`.

const filter = createTypeFilter(['message_start', 'message_delta', 'content_block_start']);

/** A started block is parsed only when it can be a tool call, not for each text or thinking block. */
const blockMayBeCall = (type: string, data: string): boolean =>
  type !== 'content_block_start' || data.includes('tool_use"');

interface AnthropicCounts {
  input: number | null;
  cacheCreation: number | null;
  /** Of the cache creation, written for one hour. */
  cacheCreation1h: number | null;
  cacheRead: number | null;
  output: number | null;
  /** Of the output, spent thinking: `output_tokens_details.thinking_tokens`, where the server reports it. */
  thinking: number | null;
}

export function createMessagesCollector(): UsageCollector {
  const counts: AnthropicCounts = {
    input: null,
    cacheCreation: null,
    cacheCreation1h: null,
    cacheRead: null,
    output: null,
    thinking: null,
  };
  const calls = createCallLedger();

  function takeUsage(usage: unknown): void {
    if (!isRecord(usage)) return;
    counts.input = count(usage.input_tokens) ?? counts.input;
    const split = cacheCreationSplit(usage.cache_creation);
    counts.cacheCreation = count(usage.cache_creation_input_tokens) ?? split?.total ?? counts.cacheCreation;
    counts.cacheCreation1h = split?.hour ?? counts.cacheCreation1h;
    counts.cacheRead = count(usage.cache_read_input_tokens) ?? counts.cacheRead;
    counts.output = count(usage.output_tokens) ?? counts.output;
    if (isRecord(usage.output_tokens_details))
      counts.thinking = count(usage.output_tokens_details.thinking_tokens) ?? counts.thinking;
  }

  function noteBlock(block: unknown, key: string | null): void {
    if (!isRecord(block) || typeof block.type !== 'string' || !block.type.endsWith('tool_use')) return;
    calls.note(key, nameOf(block.name) ?? block.type);
  }

  return {
    json(body) {
      if (!isRecord(body)) return;
      takeUsage(body.usage);
      if (Array.isArray(body.content)) for (const block of body.content as unknown[]) noteBlock(block, null);
    },
    event(ev) {
      const found = filter.read(ev, blockMayBeCall);
      if (found === null) return;
      const { type, payload } = found;
      if (type === 'message_start') {
        if (isRecord(payload.message)) takeUsage(payload.message.usage);
      } else if (type === 'message_delta') takeUsage(payload.usage);
      else noteBlock(payload.content_block, typeof payload.index === 'number' ? String(payload.index) : null);
    },
    mayRead: (block) => filter.mayHold(block),
    result() {
      const parts = [counts.input, counts.cacheCreation, counts.cacheRead].filter((n): n is number => n !== null);
      const inputTokens = parts.length === 0 ? null : parts.reduce((a, b) => a + b, 0);
      const outputTokens = counts.output;
      const result = report(
        {
          inputTokens,
          outputTokens,
          cachedInputTokens: counts.cacheRead,
          // Thinking is inside output_tokens; its share is reported apart only by servers that send it.
          reasoningTokens: counts.thinking,
          totalTokens: inputTokens !== null && outputTokens !== null ? inputTokens + outputTokens : null,
          costUsd: null,
        },
        calls,
        null,
      );
      // Only where reported, like the other protocols, which have no such figure at all.
      if (counts.cacheCreation !== null) result.cacheWriteTokens = counts.cacheCreation;
      if (counts.cacheCreation1h !== null)
        result.cacheWrite1hTokens = Math.min(counts.cacheCreation1h, counts.cacheCreation ?? 0);
      return result;
    },
  };
}
