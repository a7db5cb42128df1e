import type { TranscriptPrefix } from '@agentq/shared';

/**
 * The transcripts this worker read for its last steps, so that a run's next step reads only the
 * messages added since (its assistant message and the round's tool results) instead of the
 * whole transcript again: a step's read and parse no longer grow with everything before it.
 * With each, the run's spec, which never changes, so that the next step does not read it either.
 * Bounded by the stored size of what it holds (least recently used out first); a run's entry
 * goes when the run ends here. What it holds is only ever a start of the transcript, which
 * loadStep checks against the stored length (and the spec against the run's creation time)
 * before using it.
 */
export class TranscriptCache {
  private readonly entries = new Map<string, TranscriptPrefix>();
  private size = 0;

  /** What an entry costs: its messages' and its spec's stored size. */
  private static charge(entry: TranscriptPrefix): number {
    return entry.size + (entry.spec?.bytes ?? 0);
  }

  constructor(private readonly maxSize: number) {}

  get(runId: string): TranscriptPrefix | undefined {
    const entry = this.entries.get(runId);
    if (!entry) return undefined;
    // Most recently used last: Map keeps insertion order.
    this.entries.delete(runId);
    this.entries.set(runId, entry);
    return entry;
  }

  set(runId: string, entry: TranscriptPrefix): void {
    this.delete(runId);
    const charge = TranscriptCache.charge(entry);
    if (charge > this.maxSize) return;
    this.entries.set(runId, entry);
    this.size += charge;
    for (const [id, old] of this.entries) {
      if (this.size <= this.maxSize) break;
      this.entries.delete(id);
      this.size -= TranscriptCache.charge(old);
    }
  }

  delete(runId: string): void {
    const entry = this.entries.get(runId);
    if (!entry) return;
    this.entries.delete(runId);
    this.size -= TranscriptCache.charge(entry);
  }

  /** Runs held and their stored size. */
  stats(): { runs: number; size: number } {
    return { runs: this.entries.size, size: this.size };
  }
}
