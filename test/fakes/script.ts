import { createHash } from 'node:crypto';

// What a fake model "says" and what it reports having spent: one mutable state per fake, set by the test
// (`setUsage`, `setOutput`) and read by every route, so one test can pin the numbers a gateway must meter.

export interface FakeUsage {
  /** Prompt tokens (chat `prompt_tokens`, responses/messages `input_tokens`). */
  inputTokens: number;
  /** Completion tokens, reasoning included as OpenAI counts them. */
  outputTokens: number;
  /** Of the input, read from a prompt cache (`cached_tokens`, `cache_read_input_tokens`). */
  cachedTokens: number;
  /** Of the output, spent on reasoning (`reasoning_tokens`). */
  reasoningTokens: number;
  /** Anthropic's `cache_creation_input_tokens`: every cache write, both lifetimes. */
  cacheCreationTokens: number;
  /**
   * Of the cache writes, those to the 1-hour cache (`cache_creation.ephemeral_1h_input_tokens`); the rest are 5-minute.
   */
  cacheCreation1hTokens?: number;
  /** OpenRouter's `usage.cost`, USD. */
  costUsd: number;
}

export interface FakeToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** A web search a Messages model runs with Anthropic's server tool, and the results it finds. */
export interface FakeWebSearch {
  query: string;
  results: { url: string; title: string }[];
}

/** A thinking block a Messages model writes first when the request enables thinking. */
export interface FakeThinking {
  text: string;
  signature: string;
}

export interface FakeOutput {
  /** The assistant text of every answer. */
  text: string;
  /** How many deltas the text is streamed in (fewer when the text is shorter). */
  chunks: number;
  /** `auto`: one call per function tool named in the request; `none`: never; a list: exactly these. */
  toolCalls: 'auto' | 'none' | FakeToolCall[];
  /**
   * Messages: tool calls only while the last message holds no tool result, then the text (an agent's round trip:
   * a call, its result, an answer).
   */
  toolCallsUntilResult?: boolean;
  /** How many pieces each tool call's JSON arguments are streamed in. */
  argumentChunks: number;
  /** Length of every synthesized speech answer. */
  speechBytes: number;
  /** Embedding width when the request does not ask for `dimensions`. */
  embeddingDimensions: number;
  /** What every transcription says. */
  transcript: string;
  /** At least this many characters in every ID the fake makes (providers' IDs are opaque, of any length). */
  idLength: number;
  /** Messages: the search the model runs when the request offers the server web search tool; null for none. */
  webSearch: FakeWebSearch | null;
  /** Messages: the thinking block written when the request enables thinking; null for none. */
  thinking: FakeThinking | null;
}

export const DEFAULT_USAGE: Readonly<FakeUsage> = Object.freeze({
  inputTokens: 31,
  outputTokens: 17,
  cachedTokens: 8,
  reasoningTokens: 5,
  cacheCreationTokens: 3,
  cacheCreation1hTokens: 0,
  costUsd: 0.000123,
});

export const DEFAULT_OUTPUT: Readonly<FakeOutput> = Object.freeze({
  text: 'The quick brown fox jumps over the lazy dog, twice.',
  chunks: 20,
  toolCalls: 'auto',
  argumentChunks: 3,
  speechBytes: 4096,
  embeddingDimensions: 8,
  transcript: 'Hello from the fake transcriber.',
  idLength: 0,
  webSearch: null,
  thinking: null,
});

export interface FakeState {
  usage: FakeUsage;
  output: FakeOutput;
  /** Deterministic, per-fake ids: `nextId('chatcmpl-')` -> `chatcmpl-fake000001`. */
  nextId(prefix: string): string;
}

export interface ScriptControls {
  setUsage(usage: Partial<FakeUsage>): void;
  setOutput(output: Partial<FakeOutput>): void;
}

export function createState(): FakeState & ScriptControls {
  let counter = 0;
  const state: FakeState & ScriptControls = {
    usage: { ...DEFAULT_USAGE },
    output: { ...DEFAULT_OUTPUT },
    nextId: (prefix) =>
      `${prefix}fake${String(++counter).padStart(Math.max(6, state.output.idLength - prefix.length - 4), '0')}`,
    setUsage(usage) {
      state.usage = { ...state.usage, ...usage };
    },
    setOutput(output) {
      state.output = { ...state.output, ...output };
    },
  };
  return state;
}

/** Splits `text` into at most `n` contiguous pieces of near-equal length; never an empty piece. */
export function splitText(text: string, n: number): string[] {
  const count = Math.max(1, Math.min(n, text.length));
  const size = Math.ceil(text.length / count);
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces.length > 0 ? pieces : [''];
}

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The request's JSON body as an object, or an empty one (routes then answer with their validation error). */
export function bodyOf(json: unknown): JsonObject {
  return isObject(json) ? json : {};
}

export function stringField(body: JsonObject, key: string): string | undefined {
  const value = body[key];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The tool calls an answer makes. `toolNames` are the function tools of the request, in order; `choice` is
 * its tool_choice, which can forbid calls (`none`) or force one function.
 */
export function plannedCalls(output: FakeOutput, toolNames: string[], choice: unknown): FakeToolCall[] {
  if (output.toolCalls === 'none' || toolNames.length === 0 || choice === 'none') return [];
  if (Array.isArray(output.toolCalls)) return output.toolCalls;
  const forced = forcedName(choice);
  const names = forced === undefined ? toolNames : toolNames.filter((n) => n === forced);
  return names.map((name, index) => ({ name, arguments: { query: `fake input for ${name}`, index } }));
}

function forcedName(choice: unknown): string | undefined {
  if (!isObject(choice)) return undefined;
  // Chat: {type: function, function: {name}}; responses and messages: {type: function|tool, name}.
  const inner = isObject(choice.function) ? choice.function : choice;
  return typeof inner.name === 'string' ? inner.name : undefined;
}

/**
 * Deterministic pseudo-random bytes derived from `seed`: a test computes the same buffer to compare a relayed
 * binary answer byte for byte. xorshift32 seeded from SHA-256, fast enough for tens of megabytes.
 */
export function pseudoRandomBytes(seed: string, size: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  let x = createHash('sha256').update(seed).digest().readUInt32LE(0) || 0x9e3779b9;
  let at = 0;
  for (; at + 4 <= size; at += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.writeUInt32LE(x >>> 0, at);
  }
  for (; at < size; at++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[at] = x & 0xff;
  }
  return out;
}

/** A deterministic unit-range vector for `text`; float32-exact so a base64 round trip compares equal. */
export function embeddingFor(text: string, dimensions: number): number[] {
  const bytes = pseudoRandomBytes(`embedding:${text}`, dimensions * 2);
  const vector: number[] = [];
  for (let i = 0; i < dimensions; i++) vector.push(Math.fround(bytes.readUInt16LE(i * 2) / 32768 - 1));
  return vector;
}

/** Little-endian float32s, base64, as OpenAI's `encoding_format: "base64"` answers. */
export function float32Base64(vector: number[]): string {
  const buffer = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => buffer.writeFloatLE(v, i * 4));
  return buffer.toString('base64');
}

export function sha256Hex(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
