/**
 * Old id -> new id of one section, for ids added in ascending order (an archive lists each section
 * by id). Two growing typed arrays and a binary search: 1M messages take 16 MB, where a Map of
 * numbers takes several times that.
 */
export class IdMap {
  private olds = new Float64Array(1024);
  private news = new Float64Array(1024);
  private n = 0;

  get size(): number {
    return this.n;
  }

  /** False when `oldId` is not above the last one added (the archive is out of order). */
  add(oldId: number, newId: number): boolean {
    if (this.n && oldId <= this.olds[this.n - 1]) return false;
    if (this.n === this.olds.length) {
      this.olds = grow(this.olds);
      this.news = grow(this.news);
    }
    this.olds[this.n] = oldId;
    this.news[this.n++] = newId;
    return true;
  }

  get(oldId: number): number | undefined {
    let lo = 0;
    let hi = this.n - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = this.olds[mid];
      if (v === oldId) return this.news[mid];
      if (v < oldId) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }
}

function grow(a: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> {
  const b = new Float64Array(a.length * 2);
  b.set(a);
  return b;
}
