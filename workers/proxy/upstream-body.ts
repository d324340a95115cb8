import type { RelayRequest } from '../../protocol/relay.ts';
import { jsonText } from '../../protocol/json-text.ts';
import { injectStreamUsage } from './usage/stream-tap.ts';

// The relayed JSON body differs from the client's in at most two members: the top-level `model` becomes the
// upstream's model ID, and a streamed chat completion asks for usage. The edge has already parsed the body
// strictly, so instead of decoding, parsing and re-serialising it again (most of a worker's time on large
// prompts), a scanner finds those members' bytes and splices the new ones in. Anything it does not expect (a
// key written with escapes at a level it reads, a repeated key it looks for, a body that is not an object)
// takes the parse-and-stringify road.

export interface UpstreamBody {
  /** The original bytes when nothing changed (no copy), else a new buffer or string. */
  body: string | Uint8Array;
  /** The body asks for a stream (top-level `stream: true`). */
  stream: boolean;
  /** Usage was asked for on the client's behalf (see injectStreamUsage). */
  injected: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const SPACE = 0x20;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const TRUE = encoder.encode('true');
const NULL = encoder.encode('null');
const USAGE_OPTIONS = encoder.encode('{"include_usage":true}');
const USAGE_MEMBER = encoder.encode(',"stream_options":{"include_usage":true}');
const INCLUDE_USAGE = encoder.encode('"include_usage":true');
const NEXT_INCLUDE_USAGE = encoder.encode(',"include_usage":true');

const TOP_KEYS: readonly string[] = ['model', 'stream', 'stream_options'];
const OPTION_KEYS: readonly string[] = ['include_usage'];
// Longer keys are never decoded to be compared.
const LONGEST_KEY = Math.max(...TOP_KEYS.map((k) => k.length), ...OPTION_KEYS.map((k) => k.length));

/** A member's value as bytes `[start, end)`. */
interface Span {
  start: number;
  end: number;
}

interface Members {
  values: Map<string, Span>;
  /** The index of the object's closing brace. */
  close: number;
  empty: boolean;
}

interface Edit extends Span {
  bytes: Uint8Array;
}

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(b: Uint8Array, i: number): number {
  while (isSpace(b[i])) i++;
  return i;
}

/** The index of the quote closing the string that opens at `open`, or -1. */
function stringEnd(b: Buffer, open: number): number {
  let q = open;
  for (;;) {
    q = b.indexOf(QUOTE, q + 1);
    if (q === -1) return -1;
    // The quote is escaped when an odd run of backslashes precedes it; the opening quote bounds the run.
    let k = q - 1;
    while (b[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q;
  }
}

/** The index just past the value that starts at `i`, or -1. Nested values are skipped, not read. */
function valueEnd(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) {
    const end = stringEnd(b, i);
    return end === -1 ? -1 : end + 1;
  }
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    for (let j = i; j < b.length; j++) {
      const d = b[j];
      if (d === QUOTE) {
        j = stringEnd(b, j);
        if (j === -1) return -1;
      } else if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if ((d === CLOSE_BRACE || d === CLOSE_BRACKET) && --depth === 0) return j + 1;
    }
    return -1;
  }
  // A number, true, false or null runs to the next delimiter.
  let j = i;
  while (j < b.length && b[j] !== COMMA && b[j] !== CLOSE_BRACE && b[j] !== CLOSE_BRACKET && !isSpace(b[j])) j++;
  return j === i ? -1 : j;
}

/**
 * The members named in `wanted` of the object that opens at `open`. Null when a key holds an escape (it
 * might spell a wanted name), a wanted name repeats (JSON.parse keeps the last; an upstream's parser might
 * keep the first, and re-serialising leaves one), or the bytes are not shaped as expected.
 */
function members(b: Buffer, open: number, wanted: readonly string[]): Members | null {
  const values = new Map<string, Span>();
  let i = skipSpace(b, open + 1);
  if (b[i] === CLOSE_BRACE) return { values, close: i, empty: true };
  for (;;) {
    if (b[i] !== QUOTE) return null;
    const keyEnd = stringEnd(b, i);
    if (keyEnd === -1) return null;
    for (let k = i + 1; k < keyEnd; k++) if (b[k] === BACKSLASH) return null;
    const name = keyEnd - i - 1 <= LONGEST_KEY ? b.toString('latin1', i + 1, keyEnd) : '';
    i = skipSpace(b, keyEnd + 1);
    if (b[i] !== COLON) return null;
    const start = skipSpace(b, i + 1);
    const end = valueEnd(b, start);
    if (end === -1) return null;
    if (wanted.includes(name)) {
      if (values.has(name)) return null;
      values.set(name, { start, end });
    }
    i = skipSpace(b, end);
    if (b[i] === CLOSE_BRACE) return { values, close: i, empty: false };
    if (b[i] !== COMMA) return null;
    i = skipSpace(b, i + 1);
  }
}

function holds(b: Buffer, span: Span, literal: Uint8Array): boolean {
  return span.end - span.start === literal.length && b.compare(literal, 0, literal.length, span.start, span.end) === 0;
}

function applyEdits(b: Buffer, edits: Edit[]): Uint8Array {
  if (edits.length === 0) return b;
  // The body is this worker's own copy: a value that fits where the old one stood is written in place, the
  // rest of the old span blanked (JSON allows spaces after a value). No new buffer for a large body.
  if (edits.every((e) => e.bytes.length <= e.end - e.start)) {
    for (const e of edits) {
      b.set(e.bytes, e.start);
      b.fill(SPACE, e.start + e.bytes.length, e.end);
    }
    return b;
  }
  edits.sort((x, y) => x.start - y.start);
  let size = b.length;
  for (const e of edits) size += e.bytes.length - (e.end - e.start);
  const out = Buffer.allocUnsafe(size);
  let from = 0;
  let at = 0;
  for (const e of edits) {
    at += b.copy(out, at, from, e.start);
    out.set(e.bytes, at);
    at += e.bytes.length;
    from = e.end;
  }
  b.copy(out, at, from);
  return out;
}

/** The scanner's road: null when the body is not what it handles. */
function spliced(b: Buffer, req: RelayRequest, streamUsage: boolean): UpstreamBody | null {
  const open = skipSpace(b, 0);
  if (b[open] !== OPEN_BRACE) return null;
  const top = members(b, open, TOP_KEYS);
  if (top === null || skipSpace(b, top.close + 1) !== b.length) return null;
  const edits: Edit[] = [];
  const model = top.values.get('model');
  if (req.upstreamModelId !== null && model !== undefined) {
    const bytes = encoder.encode(JSON.stringify(req.upstreamModelId));
    if (!holds(b, model, bytes)) edits.push({ start: model.start, end: model.end, bytes });
  }
  const streamSpan = top.values.get('stream');
  const stream = streamSpan !== undefined && holds(b, streamSpan, TRUE);
  let injected = false;
  // injectStreamUsage's rules, as bytes.
  if (req.op === 'chat.completions' && stream && streamUsage) {
    const options = top.values.get('stream_options');
    if (options === undefined) {
      edits.push({ start: top.close, end: top.close, bytes: USAGE_MEMBER });
      injected = true;
    } else if (holds(b, options, NULL)) {
      edits.push({ start: options.start, end: options.end, bytes: USAGE_OPTIONS });
      injected = true;
    } else if (b[options.start] === OPEN_BRACE) {
      const inner = members(b, options.start, OPTION_KEYS);
      if (inner === null) return null;
      const usage = inner.values.get('include_usage');
      if (usage === undefined) {
        edits.push({ start: inner.close, end: inner.close, bytes: inner.empty ? INCLUDE_USAGE : NEXT_INCLUDE_USAGE });
        injected = true;
      } else if (!holds(b, usage, TRUE)) {
        edits.push({ start: usage.start, end: usage.end, bytes: TRUE });
        injected = true;
      }
    }
  }
  return { body: applyEdits(b, edits), stream, injected };
}

/** The parse-and-stringify road, for what the scanner leaves alone. A leading BOM (the edge accepts one) is dropped. */
function reparsed(b: Buffer, req: RelayRequest, streamUsage: boolean): UpstreamBody {
  const json = JSON.parse(decoder.decode(b)) as Record<string, unknown>;
  if (req.upstreamModelId !== null && 'model' in json) json.model = req.upstreamModelId;
  const stream = json.stream === true;
  const injected = req.op === 'chat.completions' && stream && streamUsage && injectStreamUsage(json);
  return { body: jsonText(json), stream, injected };
}

/**
 * Sets the upstream model and, for a streamed chat, asks for usage. Returns the body and whether usage was
 * injected. `bytes` is the body when it is not in `req` itself (one in the shared body arena); edits that
 * fit are written into it.
 */
export function upstreamBody(req: RelayRequest, streamUsage: boolean, bytes?: Buffer): UpstreamBody {
  const { body } = req;
  const b =
    bytes ??
    (typeof body === 'string' ? Buffer.from(body, 'utf8') : body instanceof ArrayBuffer ? Buffer.from(body) : null);
  if (b === null) throw new Error('upstreamBody: a body in the arena comes as `bytes`');
  return spliced(b, req, streamUsage) ?? reparsed(b, req, streamUsage);
}
