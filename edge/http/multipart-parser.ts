import { ServiceError } from '../../protocol/errors.ts';

// An incremental RFC 7578 (over RFC 2046) multipart/form-data scanner. It reads part headers and finds
// boundaries; part content is handed on only for parts the sink asks for, and never copied here.

/** A part header block bigger than this is refused (busboy's default is 16 KiB too). */
export const HEADER_BLOCK_LIMIT = 16 * 1024;
// RFC 2046 allows any preamble, but real clients send none; bounding it makes a non-multipart body fail
// after 16 KiB instead of after the whole (possibly huge) upload has been spooled to disk.
export const PREAMBLE_LIMIT = 16 * 1024;
const PADDING_LIMIT = 1024;
const ECHO_LIMIT = 100;

const CR = 0x0d;
const LF = 0x0a;
const DASH = 0x2d;
const SP = 0x20;
const HT = 0x09;

export interface PartHeaders {
  name: string;
  filename: string | null;
}

export interface PartSink {
  /** A part's headers are complete; return true to receive its content through onData and onPartEnd. */
  onPart(part: PartHeaders): boolean;
  /** A slice of the wanted part's content; only valid during the call. */
  onData(bytes: Uint8Array): void;
  /**
   * Called with onPartEnd for a wanted part: where its content lies in the whole body, as byte offsets
   * [start, end), so a caller can replace it in a replay of the raw bytes.
   */
  onPartEnd(range: { start: number; end: number }): void;
}

/** Where the scan stands: `preamble` until the first boundary line, `epilogue` after the closing one. */
export type MultipartPhase = 'preamble' | 'part' | 'epilogue';

export interface MultipartParser {
  /** Scans the chunk synchronously; throws ServiceError INVALID_REQUEST on malformed input. */
  write(chunk: Uint8Array): void;
  phase(): MultipartPhase;
}

type State = 'preamble' | 'delimiter' | 'closeDash' | 'padding' | 'lineFeed' | 'headers' | 'body' | 'epilogue';

export function malformed(message: string): ServiceError {
  return new ServiceError('INVALID_REQUEST', `Malformed multipart body: ${message}`, { param: null });
}

/** Client text cut short enough to quote in an error message. */
export function clip(text: string): string {
  const chars = [...text];
  return chars.length <= ECHO_LIMIT ? text : `${chars.slice(0, ECHO_LIMIT).join('')}...`;
}

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const PARAM = new RegExp(`\\s*;\\s*(${TOKEN})\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s"]*))`, 'y');
const TRAILER = /\s*;?\s*$/y;
const HEAD = /^\s*([^;\s]+)/;

/** `type; a=b; c="d"` -> type (lowercased) and params (names lowercased); null when unparseable or a param repeats. */
export function parseHeaderValue(value: string): { type: string; params: Map<string, string> } | null {
  const head = HEAD.exec(value);
  if (head === null) return null;
  const params = new Map<string, string>();
  let at = head[0].length;
  for (;;) {
    PARAM.lastIndex = at;
    const match = PARAM.exec(value);
    if (match === null) break;
    const name = (match[1] ?? '').toLowerCase();
    if (params.has(name)) return null;
    params.set(name, match[2] !== undefined ? match[2].replace(/\\(.)/gs, '$1') : (match[3] ?? ''));
    at = PARAM.lastIndex;
  }
  TRAILER.lastIndex = at;
  if (!TRAILER.test(value)) return null;
  return { type: (head[1] ?? '').toLowerCase(), params };
}

// RFC 2046 allows 1-70 characters. Printable ASCII is what matters here: with no CR in the boundary, the
// delimiter's CR occurs only at its start, which lets the scanner carry a partial match across chunks
// without backtracking.
const BOUNDARY = /^[\x20-\x7e]{1,70}$/;

export function multipartBoundary(contentType: string | undefined): string | null {
  if (contentType === undefined) return null;
  const parsed = parseHeaderValue(contentType);
  if (parsed === null || parsed.type !== 'multipart/form-data') return null;
  const boundary = parsed.params.get('boundary');
  return boundary !== undefined && BOUNDARY.test(boundary) && !boundary.endsWith(' ') ? boundary : null;
}

function partHeaders(block: Buffer): PartHeaders {
  const lines: string[] = [];
  for (const line of block.toString('utf8').split('\r\n')) {
    if (line === '') continue;
    // Obsolete line folding (RFC 5322 section 2.2.3): a continuation line belongs to the header above it.
    if ((line.startsWith(' ') || line.startsWith('\t')) && lines.length > 0) lines[lines.length - 1] += line;
    else lines.push(line);
  }
  let disposition: string | null = null;
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw malformed(`a part header line is not "Name: value": "${clip(line)}".`);
    if (line.slice(0, colon).trim().toLowerCase() !== 'content-disposition') continue;
    if (disposition !== null) throw malformed('a part has two Content-Disposition headers.');
    disposition = line.slice(colon + 1);
  }
  if (disposition === null) throw malformed('a part has no Content-Disposition header.');
  const parsed = parseHeaderValue(disposition);
  if (parsed === null) throw malformed(`unparseable Content-Disposition "${clip(disposition.trim())}".`);
  if (parsed.type !== 'form-data')
    throw malformed(`Content-Disposition must be form-data, not "${clip(parsed.type)}".`);
  const name = parsed.params.get('name');
  if (name === undefined || name === '') throw malformed('a part has no Content-Disposition name.');
  return { name, filename: parsed.params.get('filename') ?? parsed.params.get('filename*') ?? null };
}

/** Where the chunk ends with the start of a delimiter (carried to the next chunk), from `at` on; else -1. */
function carriedStart(chunk: Buffer, at: number, needle: Buffer): number {
  for (let i = chunk.length - 1; i >= Math.max(at, chunk.length - needle.length + 1); i--) {
    if (chunk[i] !== CR) continue;
    return chunk.compare(needle, 0, chunk.length - i, i, chunk.length) === 0 ? i : -1;
  }
  return -1;
}

// A state machine: one closure holds the parser's state; each method reads one phase of the body.
export function createMultipartParser(boundary: string, sink: PartSink): MultipartParser {
  const needle = Buffer.from(`\r\n--${boundary}`, 'latin1');
  const header = Buffer.alloc(HEADER_BLOCK_LIMIT);
  let state: State = 'preamble';
  // Starts as if a CRLF had been read, so the body may open directly with its first boundary line.
  let matched = 2;
  let preambleBytes = 0;
  let headerLength = 0;
  let paddingBytes = 0;
  let wanted = false;
  // Absolute body offsets: where the current chunk starts, and where the wanted part's content began.
  let base = 0;
  let partStart = 0;

  function content(bytes: Uint8Array): void {
    if (state === 'preamble') {
      preambleBytes += bytes.length;
      if (preambleBytes > PREAMBLE_LIMIT) throw malformed('no boundary line in the first 16 KiB.');
    } else if (wanted && bytes.length > 0) {
      sink.onData(bytes);
    }
  }

  /** `needleEnd` is the absolute offset just past the delimiter; the part's content ended where it began. */
  function delimiterFound(needleEnd: number): void {
    if (state === 'body' && wanted) {
      wanted = false;
      sink.onPartEnd({ start: partStart, end: needleEnd - needle.length });
    }
    state = 'delimiter';
  }

  // Preamble and part bodies: hand on content up to the next delimiter, carrying a partial one over.
  function search(chunk: Buffer, start: number): number {
    const at = start;
    if (matched > 0) {
      const n = Math.min(needle.length - matched, chunk.length - at);
      if (chunk.compare(needle, matched, matched + n, at, at + n) === 0) {
        matched += n;
        if (matched === needle.length) {
          matched = 0;
          delimiterFound(base + at + n);
        }
        return at + n;
      }
      // The boundary holds no CR, so no later start can hide inside the carried prefix.
      const carried = matched;
      matched = 0;
      content(needle.subarray(0, carried));
    }
    const found = chunk.indexOf(needle, at);
    if (found !== -1) {
      content(chunk.subarray(at, found));
      delimiterFound(base + found + needle.length);
      return found + needle.length;
    }
    const cr = carriedStart(chunk, at, needle);
    if (cr !== -1) {
      content(chunk.subarray(at, cr));
      matched = chunk.length - cr;
    } else {
      content(chunk.subarray(at));
    }
    return chunk.length;
  }

  function headers(chunk: Buffer, start: number): number {
    let at = start;
    while (at < chunk.length) {
      if (headerLength === HEADER_BLOCK_LIMIT) throw malformed('a part header block is over 16 KiB.');
      header[headerLength++] = chunk[at++] ?? 0;
      if (header[headerLength - 1] !== LF || header[headerLength - 2] !== CR) continue;
      // The block ends at its first empty line, which is also the whole block when a part has no headers.
      if (headerLength === 2 || (header[headerLength - 3] === LF && header[headerLength - 4] === CR)) {
        wanted = sink.onPart(partHeaders(header.subarray(0, headerLength)));
        partStart = base + at;
        state = 'body';
        return at;
      }
    }
    return at;
  }

  // The rest of a boundary line: `--` closes the body, else optional padding and CRLF open a part.
  function lineByte(byte: number): void {
    if (state === 'delimiter' && byte === DASH) state = 'closeDash';
    else if (state === 'closeDash' && byte === DASH) state = 'epilogue';
    else if ((state === 'delimiter' || state === 'padding') && (byte === SP || byte === HT)) {
      state = 'padding';
      if (++paddingBytes > PADDING_LIMIT) throw malformed('a boundary line has over 1 KiB of padding.');
    } else if ((state === 'delimiter' || state === 'padding') && byte === CR) state = 'lineFeed';
    else if (state === 'lineFeed' && byte === LF) {
      state = 'headers';
      headerLength = 0;
      paddingBytes = 0;
    } else throw malformed('a boundary line is not followed by a line break or "--".');
  }

  return {
    write(input) {
      const chunk = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
      let at = 0;
      while (at < chunk.length && state !== 'epilogue') {
        if (state === 'preamble' || state === 'body') at = search(chunk, at);
        else if (state === 'headers') at = headers(chunk, at);
        else lineByte(chunk[at++] ?? 0);
      }
      base += chunk.length;
    },
    phase() {
      if (state === 'preamble') return 'preamble';
      return state === 'epilogue' ? 'epilogue' : 'part';
    },
  };
}
