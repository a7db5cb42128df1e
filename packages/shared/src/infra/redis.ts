import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { parseRedisUrl } from './redis-url.js';
import { coalesceWrites } from './write-bursts.js';

export type { Redis, Cluster };

/** A connection to a single Redis (also through Sentinel) or to a Redis Cluster. */
export type RedisClient = Redis | Cluster;

// Reconnect forever with a capped backoff: Redis restarts (and failovers) must heal by themselves.
const retryStrategy = (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000);

// A master that became a replica (a failover, the old master back) answers writes with READONLY:
// reconnect, so that Sentinel (or the Cluster's slot map) leads to the new master, and resend.
const reconnectOnError = (err: Error) => (err.message.startsWith('READONLY') ? 2 : false);

/**
 * A Redis connection for `REDIS_URL`, whatever it names (see parseRedisUrl), that sends its
 * commands in bursts (see coalesceWrites). `blocking`
 * connections (BullMQ workers, SSE readers) never give up on a command
 * (`maxRetriesPerRequest: null`); request-path connections fail fast so the API can answer 503
 * instead of hanging while Redis is down.
 */
export function createRedis(url: string, opts: { blocking?: boolean; name?: string } & RedisOptions = {}): RedisClient {
  const { blocking, name, ...rest } = opts;
  const target = parseRedisUrl(url);
  const behaviour: RedisOptions = {
    maxRetriesPerRequest: blocking ? null : 1,
    enableOfflineQueue: Boolean(blocking),
    connectionName: name,
    retryStrategy,
    reconnectOnError,
    ...rest,
  };
  let client: RedisClient;
  if (target.kind === 'single') client = new Redis(url, behaviour);
  else if (target.kind === 'sentinel') {
    client = new Redis({
      ...behaviour,
      sentinels: target.sentinels,
      name: target.masterName,
      username: target.username,
      password: target.password,
      sentinelPassword: target.sentinelPassword,
      // rediss+sentinel: TLS to the Sentinels and to the master they name.
      ...(target.tls ? { tls: {}, enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
      sentinelRetryStrategy: retryStrategy,
    });
  } else {
    const clusterOptions: ClusterOptions = {
      enableOfflineQueue: Boolean(blocking),
      clusterRetryStrategy: retryStrategy,
      redisOptions: {
        ...behaviour,
        username: target.username,
        password: target.password,
        ...(target.tls ? { tls: {} } : {}),
      },
    };
    client = new Cluster(target.nodes, clusterOptions);
    client.on('node error', () => {});
  }
  // Errors surface on commands; without a listener ioredis would print each reconnect attempt.
  client.on('error', () => {});
  coalesceClientWrites(client);
  return client;
}

/**
 * Coalesces the writes of every socket a client opens (see coalesceWrites): each reconnect opens
 * a new one, and a Cluster client opens one per node.
 */
function coalesceClientWrites(client: RedisClient): void {
  const hook = (node: Redis) => {
    coalesceWrites(node.stream);
    node.on('connect', () => coalesceWrites(node.stream));
  };
  if (client instanceof Cluster) client.on('+node', hook);
  else hook(client);
}

/** True when the client speaks to a Redis Cluster. */
export const isCluster = (client: RedisClient): client is Cluster => client instanceof Cluster;

/** Resolves when the connection is ready, or after `timeoutMs` (the caller goes on degraded). */
export async function waitForReady(client: RedisClient, timeoutMs = 5000): Promise<boolean> {
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
 * Whether Redis can take writes now: every master of a Cluster (or the one Redis, or Sentinel's
 * master) answers and is a master. A replica, a shard down, a failover in progress: not ready.
 */
export async function redisWritable(client: RedisClient, timeoutMs = 1000): Promise<boolean> {
  const nodes: Array<Pick<Redis, 'call'>> = isCluster(client) ? client.nodes('master') : [client];
  if (isCluster(client) && client.status !== 'ready') return false;
  const roleOf = async (n: Pick<Redis, 'call'>) => ((await n.call('ROLE')) as unknown[])[0];
  let timer: NodeJS.Timeout | undefined;
  try {
    const roles = await Promise.race([
      Promise.all(nodes.map(roleOf)),
      new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error('timeout')), timeoutMs))),
    ]);
    return roles.length > 0 && roles.every((r) => r === 'master');
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
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
  private readonly open: RedisClient[] = [];

  constructor(private readonly url: string) {}

  connect(name: string, opts: { blocking?: boolean } & RedisOptions = {}): RedisClient {
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
