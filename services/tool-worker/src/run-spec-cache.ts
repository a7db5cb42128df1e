import type { HeldRunSpec } from '@agentq/shared/store';
import { LRUCache } from 'lru-cache';

/** What the tool-worker holds of run specs, in all: a few thousand runs' specs of a few KB. */
export const RUN_SPEC_CACHE_BYTES = 8 * 1024 * 1024;

/**
 * The specs of the runs whose calls this worker began last, so that a run's next round does not
 * read its spec again (it never changes once the run is created): a round's begin reads the
 * run's status and creation time, and the spec only for a run created again under its id since.
 * Bounded by the specs' stored size, least recently used out first (a spec larger than the whole
 * bound is not held); a run's entry goes when a call finds the run ended.
 */
export class RunSpecCache extends LRUCache<string, HeldRunSpec> {
  constructor(maxSize = RUN_SPEC_CACHE_BYTES) {
    // At least 1: lru-cache takes no size of 0.
    super({ maxSize, sizeCalculation: (entry) => Math.max(1, entry.spec.bytes) });
  }

  /** Runs held and what their specs cost in all. */
  stats(): { runs: number; size: number } {
    return { runs: this.size, size: this.calculatedSize };
  }
}
