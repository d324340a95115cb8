// One seeded generator for every test that draws cases or data: the same seed gives the same sequence, so
// a failure names a seed that reproduces it.

export type Rng = () => number;

/** mulberry32: a small, fast PRNG with a 32-bit state; good enough to pick cases, not for anything secret. */
export function prng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
