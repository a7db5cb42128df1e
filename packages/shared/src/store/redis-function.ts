import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from '../redis.js';

/**
 * A store script that is also loaded as a Redis function (Redis 7's `FUNCTION LOAD`), so that a
 * call names it (`FCALL`) instead of carrying it: `EVAL` sends the whole script with every call,
 * and Redis hashes it twice a call to find it. Unlike `EVALSHA`, whose NOSCRIPT fallback sends the
 * script again after whatever the connection sent meanwhile, an `FCALL` runs in the order it was
 * sent or not at all; and unlike a script, a function outlives a restart with persistence and a
 * failover (Redis keeps it in its RDB and AOF, and replicates it).
 *
 * A call is sent as `FCALL` only over a connection on which this process loaded the library: the
 * same socket (a reconnect may reach a Redis without it: another master, or one restarted empty),
 * never on a Cluster (each master would need it; there the callers wait for the reply anyway).
 * Otherwise the caller sends `EVAL`, and loading starts. The library's name carries the script's
 * hash, so versions of agentq that share a Redis each load their own and none replaces another's.
 */
export class RedisFunction {
  /** The function's name, and its library's. */
  readonly name: string;
  private readonly library: string;
  /** The socket the library is known loaded over. */
  private loadedOn: unknown = null;
  /** The socket over which Redis refused to load it (no functions before Redis 7, or an ACL). */
  private refusedOn: unknown = null;
  private loading: Promise<void> | null = null;

  /** `body`: the script as `EVAL` runs it (it reads `KEYS` and `ARGV`). */
  constructor(
    private readonly redis: RedisClient,
    name: string,
    readonly body: string,
  ) {
    this.name = `${name}_${createHash('sha1').update(body).digest('hex').slice(0, 16)}`;
    this.library = `#!lua name=${this.name}\nlocal function run(KEYS, ARGV)\n${body}\nend\nredis.register_function('${this.name}', run)\n`;
  }

  /**
   * Whether a call sent now (at once: nothing in between) may be an `FCALL`. When it may not,
   * loading starts, for the calls after it.
   */
  usable(): boolean {
    if (isCluster(this.redis)) return false;
    const r = this.redis as Redis;
    if (r.status === 'ready' && this.loadedOn !== null && this.loadedOn === r.stream) return true;
    void this.load();
    return false;
  }

  /** Loads the library over the current connection unless it is known there; never rejects. */
  load(): Promise<void> {
    if (this.loading) return this.loading;
    if (isCluster(this.redis)) return Promise.resolve();
    const r = this.redis as Redis;
    if (r.status !== 'ready' || r.stream === this.loadedOn || r.stream === this.refusedOn) return Promise.resolve();
    this.loading = (r.call('FUNCTION', 'LOAD', this.library) as Promise<unknown>)
      .then(
        // The reply came over the socket the library is now known on.
        () => void (this.loadedOn = r.stream),
        (err: Error) => {
          if (/already exists/i.test(err.message)) this.loadedOn = r.stream;
          else this.refusedOn = r.stream;
        },
      )
      .finally(() => {
        this.loading = null;
      });
    return this.loading;
  }

  /** Takes a failed call's error: one that says the function is gone (`FUNCTION FLUSH`) has it loaded again before the next `FCALL`. */
  failed(err: unknown): void {
    if (err instanceof Error && /function not found/i.test(err.message)) this.loadedOn = null;
  }
}
