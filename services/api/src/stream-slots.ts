import { HttpError } from './http-error.js';
import { rateLimited } from './rate-limit.js';

/**
 * Counts the event streams one API process holds open, in all and per tenant. An open stream costs
 * the process tens of KB for as long as its client keeps it (docs/decisions/012), and a key may open them
 * faster than they end (`requests_per_minute` counts each once): past `perKey` the tenant's next
 * stream gets 429, past `total` any key's gets 503, so that no caller can fill the process's
 * memory with streams, and one key cannot take every slot.
 */
export class StreamSlots {
  private open = 0;
  private readonly byTenant = new Map<string, number>();

  constructor(private readonly limits: { total: number; perKey: number }) {}

  /** Takes a slot for a stream of `tenant`; returns its release (idempotent), or throws the 429 or 503. */
  take(tenant: string): () => void {
    const mine = this.byTenant.get(tenant) ?? 0;
    if (mine >= this.limits.perKey) {
      throw rateLimited(
        `this key has ${mine} event streams open on this API process (MAX_EVENT_STREAMS_PER_KEY); ` +
          `close one, or retry once one has ended`,
        1000,
      );
    }
    if (this.open >= this.limits.total) {
      throw new HttpError(
        503,
        'server_busy',
        `this API process has ${this.open} event streams open (MAX_EVENT_STREAMS); retry shortly`,
        undefined,
        { 'retry-after': '1' },
      );
    }
    this.open++;
    this.byTenant.set(tenant, mine + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.open--;
      const left = (this.byTenant.get(tenant) ?? 1) - 1;
      if (left > 0) this.byTenant.set(tenant, left);
      else this.byTenant.delete(tenant);
    };
  }

  /** Streams open (for tests and metrics). */
  get size(): number {
    return this.open;
  }
}
