import { createHash, randomFillSync } from 'node:crypto';

// ULID-shaped identifiers: 48 bits of milliseconds then 80 random bits, Crockford base32, so they sort by
// creation time as plain strings (LMDB keys, log grep) and cannot be predicted from one another.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

// Random bytes come from a refilled pool: one getrandom syscall per 409 IDs instead of one per ID.
const pool = Buffer.allocUnsafe(4096);
let poolOffset = pool.length;

/** Where the next 10 random bytes start in `pool`. */
function random10(): number {
  if (poolOffset + 10 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += 10;
  return poolOffset - 10;
}

// An ID's 26 digits are written as bytes into this scratch buffer and read out as one string: building them
// a character at a time made ~25 intermediate strings per ID, on the path of every request.
const DIGITS = Buffer.from(ALPHABET, 'latin1');
const scratch = Buffer.allocUnsafe(26);

function writeTime(ms: number): void {
  for (let i = 9; i >= 0; i--) {
    scratch[i] = DIGITS[ms % 32]!;
    ms = Math.floor(ms / 32);
  }
}

/** The 80 bits at `from` in `bytes` as 16 base32 digits, 5 bits at a time from the front, after the time's 10. */
function writeRandom(bytes: Uint8Array, from: number): void {
  let at = 10;
  let acc = 0;
  let bits = 0;
  for (let i = from; i < from + 10; i++) {
    acc = (acc << 8) | bytes[i]!;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      scratch[at++] = DIGITS[(acc >> bits) & 31]!;
    }
    acc &= (1 << bits) - 1;
  }
}

/** 48-bit milliseconds as 10 Crockford base32 digits; sorts as a string in time order. */
export function encodeTime(ms: number): string {
  writeTime(ms);
  return scratch.toString('latin1', 0, 10);
}

/** The milliseconds an ID made by newId carries after its prefix (its first 10 digits); NaN if not digits. */
export function decodeTime(id: string, prefixLength: number): number {
  let ms = 0;
  for (let i = prefixLength; i < prefixLength + 10; i++) {
    const digit = ALPHABET.indexOf(id[i] ?? '');
    if (digit < 0) return Number.NaN;
    ms = ms * 32 + digit;
  }
  return ms;
}

/** A fresh, unpredictable, time-sortable ID. */
export function newId(prefix: string, now: number = Date.now()): string {
  writeTime(now);
  writeRandom(pool, random10());
  return prefix + scratch.toString('latin1', 0, 26);
}

/**
 * An ID of the same shape made from `seed` alone (its SHA-256), so the same seed names the same record on every
 * run: for a record made from an older one, whose ID has to be the same however often the upgrade runs.
 */
export function derivedId(prefix: string, seed: string): string {
  // 130 of the hash's bits, as 26 digits: the first 17 bytes less their last 6 bits.
  let bits = BigInt(`0x${createHash('sha256').update(seed).digest('hex').slice(0, 34)}`) >> 6n;
  let digits = '';
  for (let i = 0; i < 26; i++, bits >>= 5n) digits = ALPHABET[Number(bits & 31n)] + digits;
  return prefix + digits;
}

/**
 * IDs that are strictly increasing within this process, for append-only keys (audit events) where two
 * records in the same millisecond must still keep their order.
 */
export function monotonicIdFactory(prefix: string): (now?: number) => string {
  let lastMs = -1;
  let lastRandom = 0n;
  return (now = Date.now()) => {
    if (now <= lastMs) {
      lastRandom = (lastRandom + 1n) & ((1n << 80n) - 1n);
    } else {
      lastMs = now;
      const at = random10();
      lastRandom = BigInt('0x' + pool.toString('hex', at, at + 10)) >> 1n; // headroom for increments
    }
    writeTime(lastMs);
    writeRandom(Buffer.from(lastRandom.toString(16).padStart(20, '0'), 'hex'), 0);
    return prefix + scratch.toString('latin1', 0, 26);
  };
}

export function timeOfId(id: string, prefix: string): number {
  let ms = 0;
  for (const ch of id.slice(prefix.length, prefix.length + 10)) ms = ms * 32 + ALPHABET.indexOf(ch);
  return ms;
}

/**
 * The longest response ID (UTF-8 bytes) a /v1/responses/{id} path may name: providers' own are under 100
 * ASCII characters, and the bound keeps a lookup far below LMDB's 1,978-byte key limit (docs/api.md).
 */
export const RESPONSE_ID_MAX_BYTES = 512;
