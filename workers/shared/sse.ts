// Incremental Server-Sent Events parsing (WHATWG HTML, "Parsing an event stream"), at the byte level so
// that a caller can forward the exact bytes of every event it does not change. Line ends are CR, LF or
// CRLF; CR and LF never occur inside a multi-byte UTF-8 sequence, so splitting bytes there is safe, and a
// block is decoded only once it is complete, and only when its caller needs its text.

export interface SseEvent {
  /** The `event` field; null when absent or empty (a browser would call it "message"). */
  event: string | null;
  /** The `data` lines joined with `\n`. */
  data: string;
  /** The block's text as received, comments and the terminating blank line included. */
  raw: string;
}

/** A complete block: its bytes, its decoded text, and the event it dispatches (null for comments only). */
export type SseBlockHandler = (bytes: Uint8Array, text: string, event: SseEvent | null) => void;

export interface SseBlockReader {
  push(chunk: Uint8Array): void;
  /** Flushes a block ended by a final CR and returns the bytes of an unterminated trailing block, if any. */
  end(): Uint8Array | null;
}

const LF = 0x0a;
const CR = 0x0d;
const BOM = 0xfeff;

/**
 * The event a complete block dispatches, or null when it has no `data` line (spec: an empty data buffer
 * dispatches nothing). Fields other than `event` and `data` (`id`, `retry`, unknown ones) are ignored.
 * Lines are walked by index rather than split: this runs once per event on the relay's hot path.
 */
export function parseSseBlock(text: string): SseEvent | null {
  let event: string | null = null;
  let data: string | null = null;
  const length = text.length;
  // The next CR and LF are searched for again only once passed, so that a block in which one of them never
  // occurs (most upstreams end lines with LF only) is not rescanned for it on every line.
  let cr = text.indexOf('\r');
  let lf = text.indexOf('\n');
  let at = 0;
  while (at < length) {
    if (lf !== -1 && lf < at) lf = text.indexOf('\n', at);
    if (cr !== -1 && cr < at) cr = text.indexOf('\r', at);
    let end = length;
    let next = length;
    if (cr !== -1 && (lf === -1 || cr < lf)) {
      end = cr;
      next = text.charCodeAt(cr + 1) === LF ? cr + 2 : cr + 1;
    } else if (lf !== -1) {
      end = lf;
      next = lf + 1;
    }
    const isData = text.startsWith('data', at);
    if (isData || text.startsWith('event', at)) {
      const nameEnd = at + (isData ? 4 : 5);
      // `data` alone is the field with an empty value; `dataX:` is another field.
      if (nameEnd === end || text.charCodeAt(nameEnd) === 0x3a) {
        let from = nameEnd === end ? end : nameEnd + 1;
        if (from < end && text.charCodeAt(from) === 0x20) from++;
        const value = text.slice(from, end);
        if (!isData) event = value === '' ? null : value;
        else data = data === null ? value : `${data}\n${value}`;
      }
    }
    at = next;
  }
  return data === null ? null : { event, data, raw: text };
}

/**
 * Past this size a block is not held any longer: the largest real events (a Responses stream's final event
 * with generated images in base64) stay far below it, and a stream without blank lines must not grow a
 * worker's memory without bound.
 */
export const MAX_HELD_BYTES = 64 * 1024 * 1024;

/**
 * A complete block's bytes (`whole`), or a piece of a block too large to hold (not whole, never an event).
 * `first` is true for the bytes that open the stream, where a byte order mark is allowed.
 */
export type SseSplitHandler = (bytes: Buffer, whole: boolean, first: boolean) => void;

export interface SseSplitter {
  push(chunk: Uint8Array): void;
  /** Flushes a block ended by a final CR and returns the bytes of an unterminated trailing block, if any. */
  end(): Buffer | null;
}

/** Whether `needle` stands in `block` at `at`. A loop, not Buffer#compare: for a few bytes a native call costs more. */
export function bytesAt(block: Uint8Array, at: number, needle: Uint8Array): boolean {
  if (at < 0 || at + needle.length > block.length) return false;
  for (let i = 0; i < needle.length; i++) if (block[at + i] !== needle[i]) return false;
  return true;
}

const asBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/**
 * Splits a byte stream into blocks at blank lines and hands each on as soon as it is complete, without
 * decoding it: a caller decodes (decodeSseBlock) only the blocks it needs. Bytes of an unfinished block are
 * copied, never kept as views: a caller may reuse or transfer its chunk once push returns. A block that
 * outgrows `maxHeldBytes` is handed on as it comes, in pieces, up to its end.
 */
export function createSseSplitter(onBlock: SseSplitHandler, maxHeldBytes = MAX_HELD_BYTES): SseSplitter {
  let carry: Buffer[] = [];
  let held = 0;
  let oversized = false;
  let lineEmpty = true;
  let afterCR = false;
  // A CR ended a blank line; an LF right after it still belongs to the block.
  let endAtCR = false;
  let first = true;

  function emit(chunk: Buffer, from: number, to: number): void {
    const piece = chunk.subarray(from, to);
    const opening = first;
    first = false;
    if (oversized) {
      oversized = false;
      onBlock(piece, false, opening);
      return;
    }
    let bytes = piece;
    if (carry.length > 0) {
      carry.push(piece);
      bytes = Buffer.concat(carry, held + piece.byteLength);
      carry = [];
      held = 0;
    }
    onBlock(bytes, true, opening);
  }

  function hold(rest: Buffer): void {
    if (oversized) {
      onBlock(rest, false, false);
      return;
    }
    carry.push(Buffer.from(rest));
    held += rest.byteLength;
    if (held <= maxHeldBytes) return;
    oversized = true;
    const bytes = Buffer.concat(carry, held);
    carry = [];
    held = 0;
    const opening = first;
    first = false;
    onBlock(bytes, false, opening);
  }

  return {
    push(input) {
      const chunk = asBuffer(input);
      const length = chunk.length;
      if (length === 0) return;
      // Line ends are found with native searches for CR and LF, each repeated only once passed: most
      // upstreams never send a CR, and a byte loop in JS was the slowest part of the tap.
      let start = 0;
      let pos = 0;
      if (afterCR) {
        afterCR = false;
        if (chunk[0] === LF) pos = 1;
        if (endAtCR) {
          endAtCR = false;
          emit(chunk, 0, pos);
          start = pos;
        }
      }
      let lf = chunk.indexOf(LF, pos);
      let cr = chunk.indexOf(CR, pos);
      while (lf !== -1 || cr !== -1) {
        const atLF = cr === -1 || (lf !== -1 && lf < cr);
        const at = atLF ? lf : cr;
        // The line that ends here is blank when it starts here, after a line end of this chunk or the last.
        const blank = at === pos && (pos > 0 || lineEmpty);
        if (!atLF && at + 1 === length) {
          // Whether an LF follows this CR is for the next chunk to say.
          afterCR = true;
          endAtCR = blank;
          pos = length;
          break;
        }
        const next = atLF || chunk[at + 1] !== LF ? at + 1 : at + 2;
        if (blank) {
          emit(chunk, start, next);
          start = next;
        }
        pos = next;
        if (lf !== -1 && lf < pos) lf = chunk.indexOf(LF, pos);
        if (cr !== -1 && cr < pos) cr = chunk.indexOf(CR, pos);
      }
      lineEmpty = pos === length;
      if (start < length) hold(chunk.subarray(start));
    },
    end() {
      if (endAtCR) {
        endAtCR = false;
        afterCR = false;
        emit(Buffer.alloc(0), 0, 0);
      }
      const rest = carry.length > 0 ? Buffer.concat(carry, held) : null;
      carry = [];
      held = 0;
      oversized = false;
      lineEmpty = true;
      afterCR = false;
      return rest;
    },
  };
}

// Fatal-free: a stray invalid byte becomes U+FFFD in the text, while the bytes stay as they were.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * A block's text and the event it dispatches (null for comments only). The spec strips one BOM at the start
 * of the stream only; the text keeps it, so that a caller rewriting the block rewrites exactly what came.
 */
export function decodeSseBlock(bytes: Uint8Array, first: boolean): { text: string; event: SseEvent | null } {
  const text = decoder.decode(bytes);
  const strip = first && text.charCodeAt(0) === BOM;
  const event = parseSseBlock(strip ? text.slice(1) : text);
  if (event !== null && strip) event.raw = text;
  return { text, event };
}

/** A block splitter that decodes every block: for callers that read each event (tests, the fixtures). */
export function createSseBlockReader(onBlock: SseBlockHandler, maxHeldBytes = MAX_HELD_BYTES): SseBlockReader {
  return createSseSplitter((bytes, whole, first) => {
    if (!whole) {
      onBlock(bytes, '', null);
      return;
    }
    const { text, event } = decodeSseBlock(bytes, first);
    onBlock(bytes, text, event);
  }, maxHeldBytes);
}

export interface SseParser {
  /** Complete events found so far in this chunk and the text held from earlier ones. */
  push(chunk: string | Uint8Array): SseEvent[];
  /** Events completed by the end of the stream. An unterminated last event is discarded, as the spec says. */
  end(): SseEvent[];
}

export function createSseParser(): SseParser {
  let events: SseEvent[] = [];
  const reader = createSseBlockReader((_bytes, _text, event) => {
    if (event !== null) events.push(event);
  });
  const encoder = new TextEncoder();
  let highSurrogate = '';
  const take = (): SseEvent[] => {
    const out = events;
    events = [];
    return out;
  };
  return {
    push(chunk) {
      if (typeof chunk !== 'string') {
        reader.push(chunk);
        return take();
      }
      let text = highSurrogate + chunk;
      highSurrogate = '';
      const last = text.charCodeAt(text.length - 1);
      // A surrogate pair cut between two text chunks would otherwise encode as two U+FFFD.
      if (last >= 0xd800 && last <= 0xdbff) {
        highSurrogate = text.slice(-1);
        text = text.slice(0, -1);
      }
      reader.push(encoder.encode(text));
      return take();
    },
    end() {
      if (highSurrogate !== '') reader.push(encoder.encode(highSurrogate));
      highSurrogate = '';
      reader.end();
      return take();
    },
  };
}
