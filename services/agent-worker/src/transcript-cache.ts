import type { TranscriptPrefix } from '@agentq/shared/store';
import { LRUCache } from 'lru-cache';

/**
 * The transcripts this worker read for its last steps, so that a run's next step reads only the
 * messages added since (its assistant message and the round's tool results) instead of the
 * whole transcript again: a step's read and parse no longer grow with everything before it.
 * With each, the run's spec, which never changes, so that the next step does not read it either.
 * Bounded by the stored size of what it holds (least recently used out first; an entry larger
 * than the whole bound is not held, and takes the run's older entry with it); a run's entry
 * goes when the run ends here. What it holds is only ever a start of the transcript, which
 * loadStep checks against the stored length (and the spec against the run's creation time)
 * before using it.
 */
export class TranscriptCache extends LRUCache<string, TranscriptPrefix> {
  constructor(maxSize: number) {
    // What an entry costs: its messages' and its spec's stored size (at least 1: lru-cache takes
    // no size of 0).
    super({ maxSize, sizeCalculation: (entry) => Math.max(1, entry.size + (entry.spec?.bytes ?? 0)) });
  }

  /** Runs held and what they cost in all. */
  stats(): { runs: number; size: number } {
    return { runs: this.size, size: this.calculatedSize };
  }
}
