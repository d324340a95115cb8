import { ServiceError } from '../../protocol/errors.ts';
import { createMultipartParser, malformed, multipartBoundary } from './multipart-parser.ts';
import { createSpillBuffer } from './multipart-spill.ts';

// The multipart routes (images/edits, audio/transcriptions) must know `model` to pick the upstream, yet
// clients, the openai SDK included, often send the file part first. This scans the body as it arrives for
// the one `model` field and keeps the bytes read so far (memory, then a private temp file) so the request
// can be forwarded unchanged once the provider is known; it never holds a whole upload in memory.
//
// Once push() has returned the model, the caller forwards the rest of the body itself and normally stops
// feeding the scanner. The "exactly one model field" rule is then enforced only over the scanned prefix:
// a second `model` after the first is caught if it is in the same chunk, or if the caller keeps feeding
// (pushes after the model is found are scanned but not buffered). Feeding the rest costs a scan of the
// body and buys the full check; that choice is the caller's.

export { multipartBoundary } from './multipart-parser.ts';

export interface ModelScan {
  /**
   * Feed the next body chunk (copied if kept). Returns the model once found, else null. Throws ServiceError on
   * malformed input.
   */
  push(chunk: Uint8Array): Promise<string | null>;
  /**
   * Call at end of body. Throws ServiceError INVALID_REQUEST (param 'model') when no model field was found
   * or two were. Once the model is found it returns it without judging the unfed rest of the body.
   */
  end(): Promise<string>;
  /** Every chunk pushed up to and including the one that revealed the model, in order; re-iterable. */
  replay(): AsyncIterable<Uint8Array>;
  /** Where the model field's value lies in the body, as byte offsets [start, end); null until found. */
  modelRange(): { start: number; end: number } | null;
  /** Bytes held in memory right now: at most memoryLimit plus the chunks whose spill writes are in flight. */
  bufferedBytes(): number;
  /** Removes any temp file; idempotent; must be called on every exit path. */
  dispose(): Promise<void>;
}

export interface ModelScanOptions {
  spillDir: string;
  /** Bytes of the body kept in memory before spilling to a temp file; default 4 MiB. */
  memoryLimit?: number;
  /** Longest accepted `model` value in bytes; default 1024. */
  maxFieldBytes?: number;
}

const MODEL = 'model';
const DEFAULT_MEMORY_LIMIT = 4 * 1024 * 1024;
const DEFAULT_MAX_FIELD_BYTES = 1024;

function invalidModel(message: string): ServiceError {
  return new ServiceError('INVALID_REQUEST', message, { param: MODEL });
}

function checkSize(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer.`);
  return value;
}

// A factory: one closure holds the scan's state (the parser, the prefix held until `model` arrives).
export function createModelScan(contentType: string, options: ModelScanOptions): ModelScan {
  const boundary = multipartBoundary(contentType);
  if (boundary === null) {
    throw new ServiceError(
      'INVALID_REQUEST',
      'This route takes a multipart/form-data body; send a Content-Type of multipart/form-data with a boundary.',
      { param: null },
    );
  }
  const memoryLimit = checkSize('memoryLimit', options.memoryLimit ?? DEFAULT_MEMORY_LIMIT);
  const maxFieldBytes = checkSize('maxFieldBytes', options.maxFieldBytes ?? DEFAULT_MAX_FIELD_BYTES);
  const spill = createSpillBuffer(options.spillDir, memoryLimit);
  const value = Buffer.alloc(maxFieldBytes);
  let valueLength = 0;
  let model: string | null = null;
  let modelRange: { start: number; end: number } | null = null;
  // A throw leaves the parser mid-chunk; every later call repeats the first failure instead of guessing.
  let failure: unknown = null;
  let closed = false;

  const parser = createMultipartParser(boundary, {
    onPart(part) {
      if (part.name !== MODEL) return false;
      if (model !== null) throw invalidModel('The body has more than one model field; send exactly one.');
      if (part.filename !== null) throw invalidModel('The model field must be a plain form field, not a file.');
      valueLength = 0;
      return true;
    },
    onData(bytes) {
      if (valueLength + bytes.length > maxFieldBytes) {
        throw invalidModel(`The model field is longer than ${maxFieldBytes} bytes.`);
      }
      value.set(bytes, valueLength);
      valueLength += bytes.length;
    },
    onPartEnd(range) {
      let text: string;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(value.subarray(0, valueLength));
      } catch {
        throw invalidModel('The model field is not valid UTF-8.');
      }
      if (text === '') throw invalidModel('The model field is empty.');
      model = text;
      modelRange = range;
    },
  });

  function usable(): void {
    if (closed) throw new Error('This model scan has been disposed.');
    if (failure !== null) throw failure;
  }

  function scan(chunk: Uint8Array): void {
    try {
      parser.write(chunk);
    } catch (err) {
      failure = err;
      throw err;
    }
  }

  return {
    modelRange: () => modelRange,
    async push(chunk) {
      usable();
      if (model !== null) {
        scan(chunk);
        return model;
      }
      scan(chunk);
      try {
        await spill.append(chunk);
      } catch (err) {
        failure = err;
        throw err;
      }
      return model;
    },

    async end() {
      usable();
      if (model !== null) return model;
      const phase = parser.phase();
      if (phase === 'epilogue') throw invalidModel('The multipart body has no model field.');
      if (phase === 'preamble')
        throw malformed('the body holds no boundary line for the boundary in its Content-Type.');
      throw malformed('the body ends inside a part before any model field.');
    },

    replay() {
      if (closed) throw new Error('This model scan has been disposed.');
      return spill.read();
    },

    bufferedBytes: () => spill.memoryBytes(),

    dispose() {
      closed = true;
      return spill.dispose();
    },
  };
}
