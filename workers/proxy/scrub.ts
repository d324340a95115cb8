// An upstream that echoes the request's headers (a debugging proxy, a misconfigured gateway, a compatible
// server that quotes its input) would show the stored credential to an inference-scope client. The worker
// knows that credential exactly, so every relayed body is searched for its bytes and they are masked: a
// whole answer with one indexOf, a stream chunk by chunk with one indexOf each, holding back only a tail
// that could begin the credential, so that a credential cut in two by the upstream's writes is still found.

import type { UpstreamModel, UpstreamModelList } from '../../protocol/providers.ts';

export const MASK = Buffer.from('[redacted]', 'latin1');

/**
 * Shorter credentials are placeholders that local servers ignore ("none", "ollama", "x"); searching for
 * them would mask ordinary words in every answer (`"tool_choice":"none"`) and protect nothing.
 */
export const MIN_SCRUBBED_BYTES = 8;

/** A held-back tail at least this long when the stream ends is part of the credential: it is masked. */
const PARTIAL_MASK_MIN = 4;

/** The credential's bytes, or null when answers need no search. */
export function scrubTarget(credential: string | null): Buffer | null {
  if (credential === null) return null;
  const bytes = Buffer.from(credential, 'utf8');
  return bytes.byteLength >= MIN_SCRUBBED_BYTES ? bytes : null;
}

/** `body` with every occurrence of `secret` masked; `body` itself when there is none (the common case). */
export function scrubWhole(body: Buffer, secret: Buffer | null): Buffer {
  if (secret === null) return body;
  const first = body.indexOf(secret);
  if (first === -1) return body;
  const parts = maskAll(body, secret, first, body.byteLength);
  // An ArrayBuffer of its own, as the relay transfers it.
  return concatOwn(parts);
}

/**
 * Relayed response headers with the credential masked: the allow-list lets `x-ratelimit-*` and friends
 * through, and an echoing upstream may put anything there. The same object when none holds it.
 */
export function scrubHeaders(headers: Record<string, string>, credential: string | null): Record<string, string> {
  if (credential === null || Buffer.byteLength(credential) < MIN_SCRUBBED_BYTES) return headers;
  let out: Record<string, string> | null = null;
  for (const name in headers) {
    const value = headers[name]!;
    if (!value.includes(credential)) continue;
    out ??= { ...headers };
    out[name] = value.replaceAll(credential, MASK.toString('latin1'));
  }
  return out ?? headers;
}

/**
 * A listed model whose ID or display name holds the credential is left out whole: its ID would be shown by
 * every catalog answer, stored, and sent back upstream, and a masked ID would name another model.
 */
export function withholdEchoes(models: UpstreamModel[], credential: string | null): UpstreamModelList {
  if (credential === null || Buffer.byteLength(credential) < MIN_SCRUBBED_BYTES) return { models, withheld: 0 };
  const kept = models.filter(
    (m) => !m.upstreamModelId.includes(credential) && !(m.displayName?.includes(credential) ?? false),
  );
  return { models: kept, withheld: models.length - kept.length };
}

export interface StreamScrubber {
  /** The bytes to pass on now; a tail that may begin the credential waits for the next chunk. */
  push(chunk: Uint8Array): Uint8Array;
  /** What was held back when the stream ends (masked when it is a real part of the credential), or null. */
  end(): Uint8Array | null;
}

/** A scrubber for one stream, or null when there is nothing to search for. */
export function streamScrubber(secret: Buffer | null): StreamScrubber | null {
  if (secret === null) return null;
  let held: Buffer | null = null;
  return {
    push(chunk) {
      const data = held === null ? chunk : Buffer.concat([held, chunk]);
      held = null;
      const view = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
      const first = view.indexOf(secret);
      const end = first === -1 ? 0 : afterLastMatch(view, secret, first);
      const keep = heldTail(view, secret, end);
      if (keep < view.byteLength) held = Buffer.from(view.subarray(keep));
      if (first === -1) return keep === view.byteLength ? data : view.subarray(0, keep);
      return concatOwn(maskAll(view, secret, first, keep));
    },
    end() {
      const tail = held;
      held = null;
      if (tail === null) return null;
      return tail.byteLength >= PARTIAL_MASK_MIN ? Buffer.from(MASK) : tail;
    },
  };
}

/** Where the bytes after the last whole occurrence (from `first` on) begin. */
function afterLastMatch(data: Buffer, secret: Buffer, first: number): number {
  let at = first;
  for (let next = at; next !== -1; next = data.indexOf(secret, at)) at = next + secret.byteLength;
  return at;
}

/**
 * Where the held-back tail starts: the longest suffix of `data[from..]` that is a proper prefix of `secret`.
 * Only the last `secret.length - 1` bytes can be one, and each candidate starts with the secret's first byte.
 */
function heldTail(data: Buffer, secret: Buffer, from: number): number {
  const first = secret[0]!;
  for (
    let at = data.indexOf(first, Math.max(from, data.byteLength - secret.byteLength + 1));
    at !== -1;
    at = data.indexOf(first, at + 1)
  ) {
    if (data.compare(secret, 0, data.byteLength - at, at) === 0) return at;
  }
  return data.byteLength;
}

/** `data[0..end)` split around every occurrence of `secret`, each replaced by the mask. */
function maskAll(data: Buffer, secret: Buffer, first: number, end: number): Buffer[] {
  const parts: Buffer[] = [];
  let from = 0;
  for (let at = first; at !== -1 && at + secret.byteLength <= end; at = data.indexOf(secret, from)) {
    parts.push(data.subarray(from, at), MASK);
    from = at + secret.byteLength;
  }
  parts.push(data.subarray(from, end));
  return parts;
}

function concatOwn(parts: Buffer[]): Buffer {
  let size = 0;
  for (const part of parts) size += part.byteLength;
  const out = Buffer.from(new ArrayBuffer(size));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
