/**
 * What each key (the server's name of a caller) holds of one process-wide budget, and the most
 * one key may hold: a key with nothing held may always take (one request alone always goes), a
 * key holding some may not pass its share. So one key that does not read (or does not finish
 * sending) leaves the others room.
 */
export class KeyShares {
  private readonly held = new Map<string, number>();

  constructor(readonly maxPerKey: number) {}

  /** What `key` holds now. */
  of(key: string): number {
    return this.held.get(key) ?? 0;
  }

  /** Whether `key` may take `bytes` more. */
  allows(key: string, bytes: number): boolean {
    const own = this.of(key);
    return own === 0 || own + bytes <= this.maxPerKey;
  }

  /** Counts `bytes` for `key`; the release (idempotent) gives them back. */
  take(key: string, bytes: number): () => void {
    this.held.set(key, this.of(key) + bytes);
    let taken = true;
    return () => {
      if (!taken) return;
      taken = false;
      const left = this.of(key) - bytes;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
    };
  }
}
