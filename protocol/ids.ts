import { randomFillSync } from 'node:crypto';

// ULID-shaped identifiers: 48 bits of milliseconds then 80 random bits, Crockford base32, so they sort by
// creation time as plain strings (LMDB keys, log grep) and cannot be predicted from one another.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

// Random bytes come from a refilled pool: one getrandom syscall per 409 IDs instead of one per ID.
const pool = Buffer.allocUnsafe(4096);
let poolOffset = pool.length;

function randomBytes10(): Buffer {
  if (poolOffset + 10 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const out = pool.subarray(poolOffset, poolOffset + 10);
  poolOffset += 10;
  return out;
}

/** 48-bit milliseconds as 10 Crockford base32 digits; sorts as a string in time order. */
export function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

function encodeRandom(bytes: Uint8Array): string {
  // 80 bits = 16 base32 digits, taken 5 bits at a time from the front.
  let out = '';
  let acc = 0;
  let bits = 0;
  for (const byte of bytes) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return out;
}

/** A fresh, unpredictable, time-sortable ID. */
export function newId(prefix: string, now: number = Date.now()): string {
  return prefix + encodeTime(now) + encodeRandom(randomBytes10());
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
      lastRandom = BigInt('0x' + randomBytes10().toString('hex')) >> 1n; // headroom for increments
    }
    const bytes = Buffer.from(lastRandom.toString(16).padStart(20, '0'), 'hex');
    return prefix + encodeTime(lastMs) + encodeRandom(bytes);
  };
}

export function timeOfId(id: string, prefix: string): number {
  let ms = 0;
  for (const ch of id.slice(prefix.length, prefix.length + 10)) ms = ms * 32 + ALPHABET.indexOf(ch);
  return ms;
}
