// FNV-1a (32 bits) over a string's UTF-16 units. Two runs from different seeds make the 64-bit keys of the
// limit ledger and the loop brake's tool-call signatures: fast, not cryptographic, collisions as rare as 2^-64.

/** FNV-1a of `text` from `seed` (0x811c9dc5 is the standard offset basis), unsigned. */
export function fnv1a(text: string, seed: number): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Seeds of the two runs: the standard basis, and the FNV prime as a second, independent start. */
export const FNV_SEEDS = [0x811c9dc5, 0x01000193] as const;
