import type { UsageReport } from '../../../protocol/gateway.ts';
import { isRecord } from '../../shared/shape.ts';
import { count } from '../../shared/usage-counts.ts';

// What every protocol's collector shares: the collector's shape, lenient readers for the usage fields the
// providers document, and the ledger of tool calls.

export type UsageResult = UsageReport & { responseId: string | null };

/** The parts of an SSE event a collector reads. */
export interface SseFields {
  event: string | null;
  data: string;
}

export interface UsageCollector {
  /** A whole (non-streamed) answer, already parsed. */
  json(body: unknown): void;
  /** One event of a streamed answer, in order. */
  event(ev: SseFields): void;
  /**
   * Whether a stream's block, as raw bytes, may matter to `event`: a cheap byte search, so that the stream tap
   * decodes and parses only such blocks. It may say yes to a block `event` then ignores, never no to one
   * it would read; it answers for the block that comes next, in order. `noUsageObject`: the caller has
   * already found that the block holds no `"usage"` member whose value may be an object (the stream tap
   * searches for the key anyway, to strip it), so the collector need not search for it again.
   */
  mayRead(block: Buffer, noUsageObject?: boolean): boolean;
  /**
   * Whether the stream's closing event has been read (chat's `data: [DONE]`): a client may leave after it
   * without missing anything. Absent where no such event is read.
   */
  closed?(): boolean;
  /** Usage found so far; callable at any time, also after an interrupted stream. */
  result(): UsageResult;
}

export type TokenCounts = Omit<UsageReport, 'toolCalls'>;

export const NO_TOKENS: TokenCounts = Object.freeze({
  inputTokens: null,
  outputTokens: null,
  cachedInputTokens: null,
  reasoningTokens: null,
  totalTokens: null,
  costUsd: null,
});

function usd(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;
}

/** A parsed JSON text, or undefined when it is not JSON: a malformed event is skipped, never fatal. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function detail(usage: Record<string, unknown>, holder: string, field: string): number | null {
  const details = usage[holder];
  return isRecord(details) ? count(details[field]) : null;
}

/** Upstreams that omit the total still report its parts; the total is then their sum. */
function withTotal(tokens: TokenCounts, reported: unknown): TokenCounts {
  const total = count(reported);
  if (total !== null) return { ...tokens, totalTokens: total };
  const { inputTokens: input, outputTokens: output } = tokens;
  return { ...tokens, totalTokens: input !== null && output !== null ? input + output : null };
}

/** Chat Completions and Embeddings usage (`prompt_tokens` family); `cost` is OpenRouter's, in USD. */
export function chatUsage(usage: Record<string, unknown>, withCost: boolean): TokenCounts {
  return withTotal(
    {
      inputTokens: count(usage.prompt_tokens),
      outputTokens: count(usage.completion_tokens),
      cachedInputTokens: detail(usage, 'prompt_tokens_details', 'cached_tokens'),
      reasoningTokens: detail(usage, 'completion_tokens_details', 'reasoning_tokens'),
      totalTokens: null,
      costUsd: withCost ? usd(usage.cost) : null,
    },
    usage.total_tokens,
  );
}

/** Responses API and gpt-image usage (`input_tokens` family). */
export function responsesUsage(usage: Record<string, unknown>, withCost: boolean): TokenCounts {
  return withTotal(
    {
      inputTokens: count(usage.input_tokens),
      outputTokens: count(usage.output_tokens),
      cachedInputTokens: detail(usage, 'input_tokens_details', 'cached_tokens'),
      reasoningTokens: detail(usage, 'output_tokens_details', 'reasoning_tokens'),
      totalTokens: null,
      costUsd: withCost ? usd(usage.cost) : null,
    },
    usage.total_tokens,
  );
}

const USAGE_KEY = '"usage"';

/**
 * Whether a JSON text has a `"usage"` member whose value is an object, without parsing it. With
 * include_usage every chat chunk says `"usage":null`, so this runs on each of them; a quote cannot stand
 * unescaped inside a JSON string, so content never matches.
 */
export function hasUsageObject(json: string): boolean {
  for (let at = json.indexOf(USAGE_KEY); at !== -1; at = json.indexOf(USAGE_KEY, at + USAGE_KEY.length)) {
    let i = skipSpace(json, at + USAGE_KEY.length);
    if (json.charCodeAt(i) !== 0x3a) continue;
    i = skipSpace(json, i + 1);
    if (json.charCodeAt(i) === 0x7b) return true;
  }
  return false;
}

// Searched without its opening quote: a native search skips ahead to the needle's first byte, and quotes are
// everywhere in JSON.
const USAGE_TAIL = Buffer.from('usage"');

/** Where the next `"usage"` in a raw block starts, from `from` on; -1 when there is none. */
export function usageKeyAt(block: Buffer, from: number): number {
  for (
    let at = block.indexOf(USAGE_TAIL, from + 1);
    at !== -1;
    at = block.indexOf(USAGE_TAIL, at + USAGE_TAIL.length)
  ) {
    if (block[at - 1] === 0x22) return at - 1;
  }
  return -1;
}

/**
 * hasUsageObject over a raw SSE block, which may hold the JSON in several `data:` lines: a line break where
 * the text would have whitespace answers yes, since the joined data may then hold the object.
 */
export function mayHoldUsageObject(block: Buffer): boolean {
  for (let at = usageKeyAt(block, 0); at !== -1; at = usageKeyAt(block, at + USAGE_KEY.length)) {
    let i = skipBlanks(block, at + USAGE_KEY.length);
    const c = block[i];
    if (c === 0x0a || c === 0x0d) return true;
    if (c !== 0x3a) continue;
    i = skipBlanks(block, i + 1);
    const v = block[i];
    if (v === 0x7b || v === 0x0a || v === 0x0d) return true;
  }
  return false;
}

function skipBlanks(block: Buffer, from: number): number {
  let i = from;
  for (let c = block[i]; c === 0x20 || c === 0x09; c = block[++i]);
  return i;
}

function skipSpace(json: string, from: number): number {
  let i = from;
  for (let c = json.charCodeAt(i); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = json.charCodeAt(++i));
  return i;
}

/** A non-empty string, or null. */
export function nameOf(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

export interface CallLedger {
  /**
   * Records a tool call. Calls with the same key are one call (a stream names a call again as it goes on);
   * a null key is always a new call.
   */
  note(key: string | null, name: string): void;
  toolCalls(): Record<string, number>;
}

export function createCallLedger(): CallLedger {
  const keyed = new Map<string, string>();
  const unkeyed: string[] = [];
  return {
    note(key, name) {
      if (key === null) unkeyed.push(name);
      else keyed.set(key, name);
    },
    toolCalls() {
      const tally = new Map<string, number>();
      for (const name of keyed.values()) tally.set(name, (tally.get(name) ?? 0) + 1);
      for (const name of unkeyed) tally.set(name, (tally.get(name) ?? 0) + 1);
      // fromEntries defines own data properties, so a tool named `__proto__` is counted, not a prototype.
      return Object.fromEntries(tally);
    },
  };
}

export function report(tokens: TokenCounts, calls: CallLedger, responseId: string | null): UsageResult {
  // Field by field: V8 (Node 20) clones `{ ...tokens, toolCalls, responseId }` on a slow path that also
  // promotes the copy to the old generation, since it adds properties the source lacks (bench/PROFILE.md).
  return {
    inputTokens: tokens.inputTokens,
    outputTokens: tokens.outputTokens,
    cachedInputTokens: tokens.cachedInputTokens,
    reasoningTokens: tokens.reasoningTokens,
    totalTokens: tokens.totalTokens,
    costUsd: tokens.costUsd,
    toolCalls: calls.toolCalls(),
    responseId,
  };
}
