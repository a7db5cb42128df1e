import { Redis, type RedisOptions } from 'ioredis';

export type { Redis };

/**
 * A Redis connection. `blocking` connections (BullMQ workers, SSE readers) never give up on a
 * command (`maxRetriesPerRequest: null`); request-path connections fail fast so the API can
 * answer 503 instead of hanging while Redis is down.
 */
export function createRedis(url: string, opts: { blocking?: boolean; name?: string } & RedisOptions = {}): Redis {
  const { blocking, ...rest } = opts;
  const client = new Redis(url, {
    maxRetriesPerRequest: blocking ? null : 1,
    enableOfflineQueue: blocking ? true : false,
    connectionName: opts.name,
    // Reconnect forever with a capped backoff: Redis restarts must heal by themselves.
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
    ...rest,
  });
  // Errors surface on commands; without a listener ioredis would print each reconnect attempt.
  client.on('error', () => {});
  return client;
}

/** Resolves when the connection is ready, or after `timeoutMs` (the caller goes on degraded). */
export async function waitForReady(client: Redis, timeoutMs = 5000): Promise<boolean> {
  if (client.status === 'ready') return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      resolve(false);
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    client.once('ready', onReady);
  });
}

/**
 * Listens for a BullMQ Queue's or FlowProducer's connection errors. Without a listener BullMQ
 * prints each one raw to stderr (a stack trace per reconnect attempt while Redis is down); like
 * those of createRedis, they surface on the commands that fail, so they are only logged at debug.
 */
export function quietConnectionErrors<T extends { on(event: 'error', listener: (err: Error) => void): unknown }>(
  emitter: T,
  logger: { debug(obj: object, msg: string): void },
  what: string,
): T {
  emitter.on('error', (err: Error) => logger.debug({ err: err.message }, `${what}: connection error`));
  return emitter;
}

/**
 * The Redis connections of one process, each opened here and closed here (BullMQ does not close
 * a connection it was handed): `closeAll` quits them in reverse order of opening.
 */
export class RedisConnections {
  private readonly open: Redis[] = [];

  constructor(private readonly url: string) {}

  connect(name: string, opts: { blocking?: boolean } & RedisOptions = {}): Redis {
    const client = createRedis(this.url, { name, ...opts });
    this.open.push(client);
    return client;
  }

  /** Quits each connection (a second at most: a connection stuck on a dead Redis is dropped). */
  async closeAll(): Promise<void> {
    for (const client of this.open.splice(0).reverse()) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([client.quit().catch(() => {}), new Promise((r) => (timer = setTimeout(r, 1000)))]);
      clearTimeout(timer);
      client.disconnect();
    }
  }
}
