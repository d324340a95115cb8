import { createHash, type Hash } from 'node:crypto';

// A streaming multipart/form-data reader (RFC 7578) that keeps only a summary of each part: file parts are
// hashed and counted as they pass, never held, so a test can push hundreds of megabytes through a fake.
// Field values are kept, capped, because a test asserts on them (model, language, prompt...).

export interface PartSummary {
  name: string;
  /** Set for file parts. */
  filename: string | null;
  contentType: string | null;
  /** Bytes of the part's body. */
  size: number;
  /** Hex SHA-256 of a file part's body; null for fields. */
  sha256: string | null;
  /** A field's UTF-8 value (first FIELD_CAP bytes); null for file parts. */
  value: string | null;
}

const FIELD_CAP = 64 * 1024;
const HEADER_CAP = 16 * 1024;

/** The boundary of a multipart/form-data content type, or null. */
export function boundaryOf(contentType: string | undefined): string | null {
  if (contentType === undefined || !/^multipart\/form-data\b/i.test(contentType)) return null;
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match?.[1] ?? match?.[2] ?? null;
}

interface OpenPart {
  summary: PartSummary;
  hash: Hash | null;
  field: Buffer[];
  fieldBytes: number;
}

function parseHeaders(block: string): { name: string; filename: string | null; contentType: string | null } {
  let name = '';
  let filename: string | null = null;
  let contentType: string | null = null;
  for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'content-type') contentType = value;
    if (key !== 'content-disposition') continue;
    name = /;\s*name="((?:[^"\\]|\\.)*)"/i.exec(value)?.[1] ?? name;
    filename = /;\s*filename="((?:[^"\\]|\\.)*)"/i.exec(value)?.[1] ?? filename;
  }
  return { name, filename, contentType };
}

/**
 * Consumes `body` and returns one summary per part. Throws on a malformed stream (no closing delimiter,
 * oversized part headers), which the caller turns into the provider's 400.
 */
export async function summarizeMultipart(body: AsyncIterable<Buffer>, boundary: string): Promise<PartSummary[]> {
  // Every delimiter but the first is preceded by CRLF; prefixing one CRLF makes the first match the rest.
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const parts: PartSummary[] = [];
  // Widened by `as`: step() moves it, and the compiler cannot see that through the closure.
  let state = 'preamble' as 'preamble' | 'after-delimiter' | 'headers' | 'body' | 'done';
  let pending: Buffer = Buffer.from('\r\n');
  let open: OpenPart | null = null;

  const feed = (data: Buffer): void => {
    if (open === null || data.length === 0) return;
    open.summary.size += data.length;
    if (open.hash !== null) open.hash.update(data);
    else if (open.fieldBytes < FIELD_CAP) {
      const kept = data.subarray(0, FIELD_CAP - open.fieldBytes);
      open.field.push(Buffer.from(kept));
      open.fieldBytes += kept.length;
    }
  };
  const close = (): void => {
    if (open === null) return;
    if (open.hash !== null) open.summary.sha256 = open.hash.digest('hex');
    else open.summary.value = Buffer.concat(open.field).toString('utf8');
    parts.push(open.summary);
    open = null;
  };

  const step = (): boolean => {
    switch (state) {
      case 'preamble':
      case 'body': {
        const at = pending.indexOf(delimiter);
        if (at < 0) {
          // Keep a tail that could be the start of a delimiter split across chunks.
          const keep = Math.min(pending.length, delimiter.length - 1);
          if (state === 'body') feed(pending.subarray(0, pending.length - keep));
          pending = pending.subarray(pending.length - keep);
          return false;
        }
        if (state === 'body') feed(pending.subarray(0, at));
        close();
        pending = pending.subarray(at + delimiter.length);
        state = 'after-delimiter';
        return true;
      }
      case 'after-delimiter': {
        if (pending.length < 2) return false;
        const marker = pending.subarray(0, 2).toString('latin1');
        pending = pending.subarray(2);
        if (marker === '--') {
          state = 'done';
          return false;
        }
        if (marker !== '\r\n') throw new Error('multipart: malformed delimiter line');
        state = 'headers';
        return true;
      }
      case 'headers': {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) {
          if (pending.length > HEADER_CAP) throw new Error('multipart: part headers too large');
          return false;
        }
        const headers = parseHeaders(pending.subarray(0, end).toString('utf8'));
        const isFile = headers.filename !== null;
        open = {
          summary: { ...headers, size: 0, sha256: null, value: null },
          hash: isFile ? createHash('sha256') : null,
          field: [],
          fieldBytes: 0,
        };
        pending = pending.subarray(end + 4);
        state = 'body';
        return true;
      }
      case 'done':
        pending = Buffer.alloc(0);
        return false;
    }
  };

  for await (const chunk of body) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (step());
  }
  if (state !== 'done') throw new Error('multipart: stream ended before the closing delimiter');
  return parts;
}
