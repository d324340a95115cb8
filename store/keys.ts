import { createHash } from 'node:crypto';

// LMDB keys built from values the service does not choose (an upstream's response ID, an upstream's model
// ID, a client's path segment). lmdb-js refuses a key over 1,978 bytes with a throw, and a throw in a put
// outside a request took the whole process down (W2.6): such a value never reaches a key as it is.

/** lmdb-js's key limit (LMDB's default page size), in encoded bytes. */
export const MAX_KEY_BYTES = 1978;

// lmdb-js prefixes a string key starting with a low control character with one type byte, so a key up to
// one byte under the limit is storable whatever it starts with.
const KEEP_MAX_BYTES = MAX_KEY_BYTES - 1;

/**
 * Marks a hashed key. A value that itself starts with it is hashed too, so no value kept as it is can equal
 * the hashed form of another.
 */
export const HASHED_KEY_PREFIX = '#sha256:';

/** Whether `text` is at most `max` UTF-8 bytes, measuring only when it could be longer. */
export function fitsBytes(text: string, max: number): boolean {
  // UTF-8 takes at most 3 bytes per UTF-16 code unit.
  return text.length * 3 <= max || Buffer.byteLength(text) <= max;
}

/**
 * The LMDB key for an outside value: the value itself when it fits (so records stored before this existed
 * are found under the same key), else the prefix and the value's SHA-256 (base64url, 43 characters).
 * Deterministic, so a lookup maps its argument the same way the write did.
 */
export function boundedKey(value: string): string {
  if (fitsBytes(value, KEEP_MAX_BYTES) && !value.startsWith(HASHED_KEY_PREFIX)) return value;
  return HASHED_KEY_PREFIX + createHash('sha256').update(value, 'utf8').digest('base64url');
}
