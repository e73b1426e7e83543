// Deterministic pseudo-random numbers for the data generator (mulberry32): the same seed makes the
// same account, byte for byte, on every machine.

export function rng(seed) {
  let a = seed >>> 0 || 1;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    /** Integer in [0, n). */
    int: (n) => Math.floor(next() * n),
    pick: (list) => list[Math.floor(next() * list.length)],
    chance: (p) => next() < p,
    /** Exponentially distributed with the given mean. */
    exp: (mean) => -mean * Math.log(1 - next()),
    /** URL-safe random id of `n` characters. */
    id: (n) => {
      const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
      let out = '';
      for (let i = 0; i < n; i++) out += chars[Math.floor(next() * 64)];
      return out;
    },
  };
}
