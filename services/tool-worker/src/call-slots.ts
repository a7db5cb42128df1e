/**
 * At most `size` tool calls of a process at once (TOOL_CONCURRENCY), whether each has a job of
 * its own or shares a tool-round job with the rest of its round. Waiters are served in order.
 */
export class CallSlots {
  private free: number;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`CallSlots: size must be a positive integer, got ${size}`);
    this.free = size;
  }

  /** Calls running now. */
  get busy(): number {
    return this.size - this.free;
  }

  /** Runs `fn` once a slot is free; the slot is freed when it settles. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiters.push(resolve));
    try {
      return await fn();
    } finally {
      // A slot passes straight to the next waiter, so that no newcomer overtakes it.
      const next = this.waiters.shift();
      if (next) next();
      else this.free++;
    }
  }
}
