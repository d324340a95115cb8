import { GATEWAY_OPS, type GatewayOp } from '../../../protocol/gateway.ts';
import type { ProviderKind } from '../../../protocol/providers.ts';
import { isRecord } from '../../shared/shape.ts';
import { createUsageCollector, type UsageResult } from './collectors.ts';
import { contentBytesOf } from './estimate.ts';
import { hasUsageObject, parseJson, usageKeyAt } from './report.ts';
import { bytesAt, createSseSplitter, decodeSseBlock, parseSseBlock, type SseEvent } from '../../shared/sse.ts';

// Sits between the upstream's streamed body and the client: reads usage from the events as they pass and,
// when the relay asked for usage the client did not, takes back what that request added.

export interface StreamTapOptions {
  /**
   * The relay set `stream_options.include_usage` on a chat-completions stream the client did not ask usage
   * for (see injectStreamUsage). Ignored for every other operation, where the relay injects nothing.
   */
  stripInjectedUsage: boolean;
  providerKind?: ProviderKind;
}

export interface StreamTap {
  /** Bytes to send the client now, or null when there are none yet. */
  push(chunk: Uint8Array): Uint8Array | null;
  /** The bytes still held (only when stripping) and the usage of the whole stream. */
  end(): { tail: Uint8Array | null; usage: UsageResult };
  /** The created response's ID as soon as the stream has named it (Responses API), else null. */
  responseId(): string | null;
  /** Whether the bytes returned so far hold the stream's closing event (see UsageCollector.closed). */
  closed(): boolean;
  /** The bytes of generated text seen so far, for an estimate when no usage arrives (estimate.ts). */
  contentBytes(): number;
}

/**
 * Asks a streamed chat completion for its usage when the client did not. An explicit
 * `include_usage: false` is overridden too: the tap strips what it adds, so the client cannot tell.
 * Other `stream_options` members stay as they are. Returns whether anything was injected.
 */
export function injectStreamUsage(body: Record<string, unknown>): boolean {
  if (body.stream !== true) return false;
  const options = body.stream_options;
  if (options === undefined || options === null) {
    body.stream_options = { include_usage: true };
    return true;
  }
  // A malformed stream_options is the upstream's to reject, unchanged.
  if (!isRecord(options) || options.include_usage === true) return false;
  options.include_usage = true;
  return true;
}

// With include_usage, every chunk gains `"usage":null` and one chunk holding only the usage is added before
// `[DONE]` (OpenAI's API reference for `stream_options`). A quote cannot stand unescaped inside a JSON
// string, so these patterns match members, never content; removing the member as text keeps every other
// byte of the chunk as the upstream wrote it.
const NULL_AFTER_COMMA = /,\s*"usage"\s*:\s*null(?=\s*[,}])/g;
const NULL_BEFORE_COMMA = /"usage"\s*:\s*null\s*,\s*/g;
const NULL_ALONE = /\{\s*"usage"\s*:\s*null\s*\}/g;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

const MEMBER = ',"usage":null';

function withoutNullUsage(text: string): string {
  // Fast path for the form OpenAI and most servers write: compact, the chunk's last member, said once.
  const first = text.indexOf('"usage"');
  const after = first - 1 + MEMBER.length;
  if (
    first > 0 &&
    text.startsWith(MEMBER, first - 1) &&
    text.charCodeAt(after) === 0x7d &&
    text.indexOf('"usage"', after) === -1
  ) {
    return text.slice(0, first - 1) + text.slice(after);
  }
  return text.replace(NULL_AFTER_COMMA, '').replace(NULL_BEFORE_COMMA, '').replace(NULL_ALONE, '{}');
}

/**
 * The injected usage chunk: a usage object and no choices. OpenAI sends `choices: []`; some compatible
 * servers send null or leave it out. A chunk that also carries choices is left alone.
 */
function isUsageOnly(data: string): boolean {
  if (!hasUsageObject(data)) return false;
  const chunk = parseJson(data);
  if (!isRecord(chunk) || !isRecord(chunk.usage)) return false;
  const choices = chunk.choices;
  return choices === undefined || choices === null || (Array.isArray(choices) && choices.length === 0);
}

/** What the client gets for one block: the same bytes, rewritten bytes, or nothing. */
function forClient(bytes: Uint8Array, text: string, event: SseEvent | null): Uint8Array | null {
  if (event === null || !event.data.includes('"usage"')) return bytes;
  if (isUsageOnly(event.data)) return null;
  const changed = withoutNullUsage(text);
  return changed === text ? bytes : encoder.encode(changed);
}

const DATA_FIELD = Buffer.from('data:');
const NULL_TAIL = Buffer.from('"usage":null}');

/**
 * The bytes around `,"usage":null` when a block is one `data:` line holding it once, as its last member
 * (withoutNullUsage's fast path, on bytes): the removal then needs no decoding. Null for any other form.
 */
function aroundNullUsage(block: Buffer, at: number): [Buffer, Buffer] | null {
  if (block[at - 1] !== 0x2c || !bytesAt(block, at, NULL_TAIL) || !bytesAt(block, 0, DATA_FIELD)) return null;
  const after = at + NULL_TAIL.length - 1;
  // On the first line, so inside the data; and the only mention, so not a usage object elsewhere.
  if (block.lastIndexOf(0x0a, at) !== -1 || block.lastIndexOf(0x0d, at) !== -1 || usageKeyAt(block, after) !== -1)
    return null;
  return [block.subarray(0, at - 1), block.subarray(after)];
}

export function createStreamTap(op: GatewayOp, options: StreamTapOptions): StreamTap {
  const collector = createUsageCollector(op, { providerKind: options.providerKind });
  const observe = GATEWAY_OPS[op].metered;
  let content = 0;
  /** Most blocks cannot matter to the collector; only those that can are decoded and parsed. */
  const read = (block: Buffer, first: boolean, noUsageObject = false): void => {
    content += contentBytesOf(op, block);
    if (!collector.mayRead(block, noUsageObject)) return;
    const { event } = decodeSseBlock(block, first);
    if (event !== null) collector.event(event);
  };

  if (!options.stripInjectedUsage || op !== 'chat.completions') {
    // Zero-copy: the client gets each chunk as it came. Unmetered answers (speech audio among them) are
    // not even scanned.
    const splitter = observe
      ? createSseSplitter((block, whole, first) => {
          if (whole) read(block, first);
        })
      : null;
    return {
      push(chunk) {
        splitter?.push(chunk);
        return chunk;
      },
      end() {
        splitter?.end();
        return { tail: null, usage: collector.result() };
      },
      responseId: () => collector.result().responseId,
      closed: collector.closed,
      contentBytes: () => content,
    };
  }

  // Stripping works on whole events, so an incomplete one is held until its blank line arrives.
  let out: Uint8Array[] = [];
  const splitter = createSseSplitter((block, whole, first) => {
    const at = whole ? usageKeyAt(block, 0) : -1;
    // Where the search for the key found none, or only the null member, the collector is told so.
    if (at === -1) {
      out.push(block);
      if (whole) read(block, first, true);
      return;
    }
    const around = aroundNullUsage(block, at);
    if (around !== null) {
      out.push(around[0], around[1]);
      read(block, first, true);
      return;
    }
    content += contentBytesOf(op, block);
    const { text, event } = decodeSseBlock(block, first);
    if (event !== null) collector.event(event);
    const forward = forClient(block, text, event);
    if (forward !== null) out.push(forward);
  });
  const take = (): Uint8Array | null => {
    if (out.length === 0) return null;
    // Buffer.concat allocates small results from Node's pool, much cheaper than an ArrayBuffer each.
    const bytes = out.length === 1 ? out[0]! : Buffer.concat(out);
    out = [];
    return bytes;
  };
  return {
    push(chunk) {
      splitter.push(chunk);
      return take();
    },
    end() {
      const rest = splitter.end();
      if (rest !== null) {
        // An unterminated last event never reaches the client's parser as an event, and is not metered;
        // its bytes are still the client's, minus what the injection added.
        const text = decoder.decode(rest);
        const forward = forClient(rest, text, parseSseBlock(text));
        if (forward !== null) out.push(forward);
      }
      return { tail: take(), usage: collector.result() };
    },
    responseId: () => collector.result().responseId,
    closed: collector.closed,
    contentBytes: () => content,
  };
}
