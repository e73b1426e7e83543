/** How many of this process's ids make one estimate. */
const WINDOW = 64;
/** A window this long without an id of this process starts again: the others' ids meanwhile say nothing of now. */
const STALE_MS = 1_000;

/**
 * What share of a sequence's ids other processes took while this one took its own (PostgreSQL:
 * several server processes on one database, docs/performance.md "Several processes"). Fed with the
 * ids this process's batches were given (message ids: sends and ingest take them from one
 * sequence); the ids between them that it was not given went to another writer. Answers the other
 * writers' ids per id of this process over its last window of {@link WINDOW} ids: 0 alone, about
 * N - 1 with N processes writing alike. A hint for batching, never for correctness: a write of this
 * process that does not report its ids counts as another's.
 */
export class SequenceShare {
  private lo = Number.POSITIVE_INFINITY;
  private hi = 0;
  /** The last id of the window before, from which this window's span counts (none after a pause). */
  private base: number | undefined;
  private mine = 0;
  private last = Number.NEGATIVE_INFINITY;
  /** Other writers' ids per id of this process, from the last full window. */
  othersPerMine = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Notes ids this process was given. */
  note(ids: readonly number[]): void {
    const at = this.now();
    if (at - this.last > STALE_MS) {
      this.restart();
      this.base = undefined;
    }
    this.last = at;
    for (const id of ids) {
      if (!(id > 0)) continue;
      if (id < this.lo) this.lo = id;
      if (id > this.hi) this.hi = id;
      this.mine++;
    }
    if (this.mine < WINDOW) return;
    const span = this.hi - (this.base ?? this.lo - 1);
    this.othersPerMine = Math.max(0, span - this.mine) / this.mine;
    this.base = this.hi;
    this.restart();
  }

  /** The estimate, or 0 when this process has not written for a while (it then knows nothing of now). */
  current(): number {
    return this.now() - this.last > STALE_MS ? 0 : this.othersPerMine;
  }

  private restart(): void {
    this.lo = Number.POSITIVE_INFINITY;
    this.hi = 0;
    this.mine = 0;
  }
}

/**
 * How long a free batch lane waits to gather units (ms), given the other writers' ids per id of
 * this process (`SequenceShare`) and how long its batches take: with N processes writing alike,
 * N - 1 batch times, so that each process's batch holds about what one process's would at the
 * whole load, and the batches' fixed cost is paid about as often as by one process; at most `cap`.
 * 0 for a wait under half a millisecond (timers are whole milliseconds).
 */
export function gatherWaitMs(othersPerMine: number, batchMs: number, cap: number): number {
  const ms = Math.min(cap, othersPerMine * batchMs);
  return ms >= 0.5 ? Math.round(ms) : 0;
}
