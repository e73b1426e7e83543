/**
 * What the process's in-memory caches hold and how often they answer (docs/operations.md,
 * "Metrics"): the lead read cache, kept rows, verified tokens and SQLite's prepared statements.
 * A cache counts its look-ups into the shared totals of its name (a field increment, cheap on hot
 * paths) and registers itself to be measured at scrape time; a cache that is gone stops being
 * measured, its look-ups stay counted.
 */
export interface CacheTotals {
  hits: number;
  misses: number;
}

/** Entries held now, and their estimated bytes (0 where not estimated). */
export interface CacheSize {
  entries: number;
  bytes: number;
}

interface Measured {
  owner: WeakRef<object>;
  measure: (owner: never) => CacheSize;
}

const totals = new Map<string, CacheTotals>();
const live = new Map<string, Set<Measured>>();

/** The look-up totals of the caches named `name`, for the cache to count into. */
export function cacheTotals(name: string): CacheTotals {
  let t = totals.get(name);
  if (!t) {
    t = { hits: 0, misses: 0 };
    totals.set(name, t);
  }
  return t;
}

/**
 * Registers `owner` to be measured under `name` while it lives, by `measure`, which must reach
 * the cache only through its argument (a closure over the owner would keep it alive).
 */
export function measureCache<T extends object>(name: string, owner: T, measure: (owner: T) => CacheSize): void {
  let set = live.get(name);
  if (!set) {
    set = new Set();
    live.set(name, set);
  }
  for (const m of set) if (!m.owner.deref()) set.delete(m);
  set.add({ owner: new WeakRef(owner), measure: measure as (owner: never) => CacheSize });
}

/** Per cache name: look-ups so far, and the entries and bytes its live instances hold. */
export function cacheSnapshot(): Array<{ name: string; hits: number; misses: number; entries: number; bytes: number }> {
  const names = new Set([...totals.keys(), ...live.keys()]);
  return [...names].map((name) => {
    let entries = 0;
    let bytes = 0;
    const set = live.get(name);
    for (const m of set ?? []) {
      const owner = m.owner.deref();
      if (!owner) {
        set?.delete(m);
        continue;
      }
      const size = m.measure(owner as never);
      entries += size.entries;
      bytes += size.bytes;
    }
    const t = totals.get(name) ?? { hits: 0, misses: 0 };
    return { name, hits: t.hits, misses: t.misses, entries, bytes };
  });
}

/** Rough bytes a JSON-shaped value takes in memory: its JSON text, two bytes a character. */
export function approximateBytes(value: unknown): number {
  try {
    return (JSON.stringify(value)?.length ?? 0) * 2;
  } catch {
    return 0;
  }
}
