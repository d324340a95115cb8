// Incremental Server-Sent Events parsing (WHATWG HTML, "Parsing an event stream"), at the byte level so
// that a caller can forward the exact bytes of every event it does not change. Line ends are CR, LF or
// CRLF; CR and LF never occur inside a multi-byte UTF-8 sequence, so splitting bytes there is safe and a
// block is only decoded once it is complete.

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

export function concatBytes(pieces: readonly Uint8Array[]): Uint8Array {
  if (pieces.length === 1) return pieces[0]!;
  let size = 0;
  for (const piece of pieces) size += piece.byteLength;
  const out = new Uint8Array(size);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.byteLength;
  }
  return out;
}

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
 * Splits a byte stream into blocks at blank lines and hands each to `onBlock` as soon as it is complete.
 * Bytes of an unfinished block are copied, never kept as views: undici reuses its chunk buffers, and a
 * caller may transfer the chunk to another thread once push returns. A block that outgrows `maxHeldBytes`
 * is handed on as it comes, in pieces with no text and no event, up to its end.
 */
export function createSseBlockReader(onBlock: SseBlockHandler, maxHeldBytes = MAX_HELD_BYTES): SseBlockReader {
  // Fatal-free: a stray invalid byte becomes U+FFFD in the text, while the bytes stay as they were.
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  let carry: Uint8Array[] = [];
  let held = 0;
  let oversized = false;
  let lineEmpty = true;
  let afterCR = false;
  // A CR ended a blank line; an LF right after it still belongs to the block.
  let endAtCR = false;
  let first = true;

  function emit(chunk: Uint8Array, from: number, to: number): void {
    const piece = chunk.subarray(from, to);
    if (oversized) {
      oversized = false;
      first = false;
      onBlock(piece, '', null);
      return;
    }
    let bytes = piece;
    if (carry.length > 0) {
      carry.push(piece);
      bytes = concatBytes(carry);
      carry = [];
      held = 0;
    }
    const text = decoder.decode(bytes);
    // The spec strips one BOM at the start of the stream only; the text handed on keeps it, so that a
    // caller rewriting the block rewrites exactly what was received.
    const strip = first && text.charCodeAt(0) === BOM;
    first = false;
    const event = parseSseBlock(strip ? text.slice(1) : text);
    if (event !== null && strip) event.raw = text;
    onBlock(bytes, text, event);
  }

  function hold(rest: Uint8Array): void {
    if (oversized) {
      onBlock(rest, '', null);
      return;
    }
    carry.push(rest.slice());
    held += rest.byteLength;
    if (held <= maxHeldBytes) return;
    oversized = true;
    const bytes = concatBytes(carry);
    carry = [];
    held = 0;
    onBlock(bytes, '', null);
  }

  return {
    push(chunk) {
      // The state lives in locals while scanning: closure variables written on every byte cost a
      // context store each, which made the scan the slowest part of the tap.
      let start = 0;
      let empty = lineEmpty;
      let cr = afterCR;
      let blankCR = endAtCR;
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i]!;
        if (cr) {
          cr = false;
          if (byte === LF) {
            if (blankCR) {
              blankCR = false;
              emit(chunk, start, i + 1);
              start = i + 1;
            }
            continue;
          }
          if (blankCR) {
            blankCR = false;
            emit(chunk, start, i);
            start = i;
          }
        }
        if (byte === LF) {
          if (empty) {
            emit(chunk, start, i + 1);
            start = i + 1;
          } else empty = true;
        } else if (byte === CR) {
          cr = true;
          if (empty) blankCR = true;
          else empty = true;
        } else empty = false;
      }
      lineEmpty = empty;
      afterCR = cr;
      endAtCR = blankCR;
      if (start < chunk.length) hold(chunk.subarray(start));
    },
    end() {
      if (endAtCR) {
        endAtCR = false;
        afterCR = false;
        emit(new Uint8Array(0), 0, 0);
      }
      const rest = carry.length > 0 ? concatBytes(carry) : null;
      carry = [];
      held = 0;
      oversized = false;
      lineEmpty = true;
      afterCR = false;
      return rest;
    },
  };
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
