// A strict JSON validator over bytes, for large request bodies. It accepts exactly what `JSON.parse` accepts
// (given bytes that are valid UTF-8) and builds nothing: no string for the text, no objects for the value.
// Making a 256 KB string and parsing it costs the edge about 0.5 ms of main-thread time and as much again in
// garbage collection, while this scan costs about a tenth of that, because string contents, which are most of
// a large prompt, are searched with memchr (`indexOf`) and checked for control characters a word at a time,
// or sixteen bytes at a time when the body lies in the body arena (protocol/control-bytes.ts).
//
// It reports the top-level value's type and where the members it is asked for start and end, so the edge can
// read the `model` of a 256 KB body without parsing the rest. `JSON.parse` keeps the last of repeated keys,
// and so does this scan.

import type { ScannableMemory } from '../../protocol/control-bytes.ts';

export interface Span {
  start: number;
  end: number;
}

export interface JsonScan {
  /** The top-level value's type: 'object', 'array', 'string', 'number', 'boolean' or 'null'. */
  type: 'object' | 'array' | 'string' | 'number' | 'boolean' | 'null';
  /** The wanted members of a top-level object, as byte spans of their values (the last of repeated keys). */
  members: Map<string, Span>;
}

// Module-local on purpose, like upstream-body.ts's: imported from a shared module, the constants of this
// hot loop cost a load each under tsx (a 256 KB body of numbers took ~2 ms instead of ~0.3).
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number) => c >= ZERO && c <= NINE;
const isHex = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
// The characters that may follow a backslash, besides `u`: " \ / b f n r t
const SIMPLE_ESCAPE = new Uint8Array(256);
for (const c of [0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]) SIMPLE_ESCAPE[c] = 1;
const LITERALS: ReadonlyMap<number, Uint8Array> = new Map([
  [0x74, new TextEncoder().encode('true')],
  [0x66, new TextEncoder().encode('false')],
  [0x6e, new TextEncoder().encode('null')],
]);

// What a byte means inside a string: most are plain; a quote ends it, a backslash starts an escape, and a
// control character is not allowed.
const PLAIN = 0;
const CLOSES = 1;
const ESCAPES = 2;
const IN_STRING = new Uint8Array(256).fill(PLAIN, 0x20).fill(3, 0, 0x20);
IN_STRING[QUOTE] = CLOSES;
IN_STRING[BACKSLASH] = ESCAPES;

// Plain bytes read one by one before the scanner switches to memchr.
const PLAIN_RUN = 64;

class Invalid extends Error {}
const invalid = () => new Invalid();

/** Thrown by `scanJson` for bytes that `JSON.parse` would refuse. */
export class InvalidJson extends Error {}

/**
 * Whether any byte in [from, to) is below 0x20 (a control character, which a JSON string may not hold raw).
 * Aligned words are tested four bytes at a time: `(x - 0x20202020) & ~x & 0x80808080` is non-zero exactly
 * when some byte of x is below 0x20.
 */
function hasControl(b: Uint8Array, words: Uint32Array, from: number, to: number): boolean {
  let k = from;
  const base = b.byteOffset;
  while (k < to && (base + k) & 3) if (b[k++]! < 0x20) return true;
  const lastWord = (base + to) >> 2;
  let w = (base + k) >> 2;
  // Four words per turn, their tests or-ed: a quarter of the branches.
  for (; w + 4 <= lastWord; w += 4) {
    const x0 = words[w]!;
    const x1 = words[w + 1]!;
    const x2 = words[w + 2]!;
    const x3 = words[w + 3]!;
    if (
      (((x0 - 0x20202020) & ~x0) | ((x1 - 0x20202020) & ~x1) | ((x2 - 0x20202020) & ~x2) | ((x3 - 0x20202020) & ~x3)) &
      0x80808080
    )
      return true;
  }
  for (; w < lastWord; w++) {
    const x = words[w]!;
    if (((x - 0x20202020) & ~x & 0x80808080) !== 0) return true;
  }
  for (k = Math.max(k, lastWord * 4 - base); k < to; k++) if (b[k]! < 0x20) return true;
  return false;
}

class Scanner {
  private readonly words: Uint32Array;
  // The next backslash and quote at or after the last position asked about (b.length when there is none).
  private backslash = -1;
  private quote = -1;

  /** The SIMD test, when `b` lies in memory that has one. */
  private readonly memory: ScannableMemory | null;

  constructor(
    private readonly b: Buffer,
    memory: ScannableMemory | undefined,
  ) {
    this.words = new Uint32Array(b.buffer, 0, b.buffer.byteLength >> 2);
    this.memory = memory !== undefined && b.buffer === memory.buffer ? memory : null;
  }

  private hasControl(from: number, to: number): boolean {
    // A call into WebAssembly costs more than testing a few words here.
    if (this.memory !== null && to - from >= 256) return this.memory.hasControl(this.b.byteOffset + from, to - from);
    return hasControl(this.b, this.words, from, to);
  }

  skipSpace(i: number): number {
    const b = this.b;
    while (i < b.length && isSpace(b[i]!)) i++;
    return i;
  }

  private nextBackslash(from: number): number {
    if (this.backslash < from) {
      const at = this.b.indexOf(BACKSLASH, from);
      this.backslash = at === -1 ? this.b.length : at;
    }
    return this.backslash;
  }

  /** The next quote at or after `from` (queries only move forward), or b.length when there is none. */
  private nextQuote(from: number): number {
    if (this.quote < from) {
      const at = this.b.indexOf(QUOTE, from);
      this.quote = at === -1 ? this.b.length : at;
    }
    return this.quote;
  }

  /** The index just past the escape whose backslash is at `slash`: a simple one, or \u and four hex digits. */
  private escape(slash: number): number {
    const b = this.b;
    const c = b[slash + 1];
    if (c !== undefined && SIMPLE_ESCAPE[c] === 1) return slash + 2;
    if (c === 0x75) {
      if (slash + 5 >= b.length) throw invalid();
      for (let k = slash + 2; k < slash + 6; k++) if (!isHex(b[k]!)) throw invalid();
      return slash + 6;
    }
    throw invalid();
  }

  /**
   * The index just past the string that opens at `open`; its escapes and characters are checked. Bytes are
   * read one by one while escapes come often (code, short strings); after a run of plain bytes the rest is
   * searched with memchr and checked for control characters a word at a time (prose).
   */
  string(open: number): number {
    const b = this.b;
    const n = b.length;
    let k = open + 1;
    for (;;) {
      for (let plain = 0; plain < PLAIN_RUN; ) {
        if (k >= n) throw invalid();
        const kind = IN_STRING[b[k]!]!;
        if (kind === PLAIN) {
          k++;
          plain++;
        } else if (kind === CLOSES) return k + 1;
        else if (kind === ESCAPES) {
          k = this.escape(k);
          plain = 0;
        } else throw invalid();
      }
      const quote = this.nextQuote(k);
      const slash = this.nextBackslash(k);
      const stop = Math.min(quote, slash);
      if (stop >= n || this.hasControl(k, stop)) throw invalid();
      if (stop === quote) return quote + 1;
      k = this.escape(slash);
    }
  }

  /** The index just past the number that starts at `i`: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)? */
  number(i: number): number {
    const b = this.b;
    if (b[i] === MINUS) i++;
    if (b[i] === ZERO) i++;
    else if (isDigit(b[i]!)) while (isDigit(b[i]!)) i++;
    else throw invalid();
    if (b[i] === DOT) {
      if (!isDigit(b[++i]!)) throw invalid();
      while (isDigit(b[i]!)) i++;
    }
    if (b[i] === 0x65 || b[i] === 0x45) {
      i++;
      if (b[i] === PLUS || b[i] === MINUS) i++;
      if (!isDigit(b[i]!)) throw invalid();
      while (isDigit(b[i]!)) i++;
    }
    return i;
  }

  literal(i: number): number {
    const word = LITERALS.get(this.b[i]!);
    if (!word || i + word.length > this.b.length || this.b.compare(word, 0, word.length, i, i + word.length) !== 0)
      throw invalid();
    return i + word.length;
  }

  /**
   * The index just past the value that starts at `i`. Containers are walked with an explicit stack (true for
   * an object), so depth costs no call stack. `onMember` sees each top-level member: its key's span (quotes
   * included) and its value's.
   */
  value(i: number, onMember: (keyStart: number, keyEnd: number, start: number, end: number) => void): number {
    const b = this.b;
    const stack: boolean[] = [];
    let keyStart = 0;
    let keyEnd = 0;
    let valueStart = 0;
    /** Reads `"key" :` at j, remembering a top-level member's key, and returns where its value starts. */
    const member = (j: number): number => {
      if (b[j] !== QUOTE) throw invalid();
      const end = this.string(j);
      const colon = this.skipSpace(end);
      if (b[colon] !== COLON) throw invalid();
      const start = this.skipSpace(colon + 1);
      if (stack.length === 1) {
        keyStart = j;
        keyEnd = end;
        valueStart = start;
      }
      return start;
    };
    for (;;) {
      // A value starts at i.
      const c = b[i];
      let end: number;
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        const isObject = c === OPEN_BRACE;
        const j = this.skipSpace(i + 1);
        if (b[j] === (isObject ? CLOSE_BRACE : CLOSE_BRACKET)) end = j + 1;
        else {
          stack.push(isObject);
          i = isObject ? member(j) : j;
          continue;
        }
      } else if (c === QUOTE) end = this.string(i);
      else if (c === MINUS || (c !== undefined && isDigit(c))) end = this.number(i);
      else end = this.literal(i);
      // The value ends at `end`: close containers until one has a next member or element.
      for (;;) {
        if (stack.length === 0) return end;
        const isObject = stack[stack.length - 1]!;
        if (isObject && stack.length === 1) onMember(keyStart, keyEnd, valueStart, end);
        const j = this.skipSpace(end);
        if (b[j] === COMMA) {
          const next = this.skipSpace(j + 1);
          i = isObject ? member(next) : next;
          break;
        }
        if (b[j] !== (isObject ? CLOSE_BRACE : CLOSE_BRACKET)) throw invalid();
        stack.pop();
        end = j + 1;
      }
    }
  }
}

const TYPES: ReadonlyMap<number, JsonScan['type']> = new Map([
  [OPEN_BRACE, 'object'],
  [OPEN_BRACKET, 'array'],
  [QUOTE, 'string'],
  [0x74, 'boolean'],
  [0x66, 'boolean'],
  [0x6e, 'null'],
]);

/**
 * Validates `b` from `from` as exactly one JSON value and returns the spans of the top-level members named in
 * `wanted`. `b` must already be known to be valid UTF-8. Throws `InvalidJson` where `JSON.parse` would throw.
 */
export function scanJson(b: Buffer, from: number, wanted: readonly string[], memory?: ScannableMemory): JsonScan {
  const scanner = new Scanner(b, memory);
  const members = new Map<string, Span>();
  const start = scanner.skipSpace(from);
  try {
    const end = scanner.value(start, (keyStart, keyEnd, valueStart, valueEnd) => {
      const name = keyName(b, keyStart, keyEnd, wanted);
      if (name !== null) members.set(name, { start: valueStart, end: valueEnd });
    });
    if (scanner.skipSpace(end) !== b.length) throw invalid();
  } catch (err) {
    if (err instanceof Invalid) throw new InvalidJson('not exactly one valid JSON value');
    throw err;
  }
  const c = b[start]!;
  return { type: TYPES.get(c) ?? 'number', members };
}

const LONGEST_NAME = 64;

/** The key at [start, end) (quotes included) when it is one of `wanted`, else null. Escaped keys are decoded. */
function keyName(b: Buffer, start: number, end: number, wanted: readonly string[]): string | null {
  if (end - start - 2 > LONGEST_NAME * 6) return null;
  const raw = b.toString('utf8', start + 1, end - 1);
  const name = raw.includes('\\') ? (JSON.parse(b.toString('utf8', start, end)) as string) : raw;
  return wanted.includes(name) ? name : null;
}
