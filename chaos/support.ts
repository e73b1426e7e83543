import fs from 'node:fs';

/** `short` (CI: a few thousand fuzz cases, one kill) or `full` (every case, three kills, figures). */
export const MODE: 'short' | 'full' = process.env.CHAOS_MODE === 'full' ? 'full' : 'short';
export const FULL = MODE === 'full';

/**
 * Records a figure for docs/reliability.md: scripts/chaos.mjs prints them all at the end. Each
 * suite runs in a process of its own, so figures travel through a file (one JSON line each).
 */
export function figure(suite: string, name: string, value: number | string): void {
  const file = process.env.CHAOS_FIGURES_FILE;
  const line = JSON.stringify({ suite, name, value });
  if (file) fs.appendFileSync(file, `${line}\n`);
  else console.log(`chaos figure ${line}`);
}

/** A deterministic pseudo-random generator (mulberry32): a failing case can be replayed by its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const SEED = Number(process.env.CHAOS_SEED ?? 1);
