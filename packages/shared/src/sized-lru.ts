/**
 * What a worker holds of the runs it served last, bounded by what its entries cost (their
 * stored size, not their count): the least recently used go first, and an entry that costs more
 * than the whole bound is not held. Keyed by run id in a Map (never an object's keys).
 */
export class SizedLru<V> {
  private readonly entries = new Map<string, V>();
  private size = 0;

  constructor(
    private readonly maxSize: number,
    private readonly charge: (entry: V) => number,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    // Most recently used last: Map keeps insertion order.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry;
  }

  set(key: string, entry: V): void {
    this.delete(key);
    const charge = this.charge(entry);
    if (charge > this.maxSize) return;
    this.entries.set(key, entry);
    this.size += charge;
    for (const [oldKey, old] of this.entries) {
      if (this.size <= this.maxSize) break;
      this.entries.delete(oldKey);
      this.size -= this.charge(old);
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.size -= this.charge(entry);
  }

  /** Entries held and what they cost in all. */
  stats(): { runs: number; size: number } {
    return { runs: this.entries.size, size: this.size };
  }
}
