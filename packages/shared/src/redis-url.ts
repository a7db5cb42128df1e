/** A host and port of a Redis node or Sentinel. */
export interface RedisNode {
  host: string;
  port: number;
}

/** What `REDIS_URL` names: one Redis, a Redis Cluster, or a Sentinel group. */
export type RedisTarget =
  | { kind: 'single'; url: string; tls: boolean }
  | { kind: 'cluster'; nodes: RedisNode[]; username?: string; password?: string; tls: boolean }
  | { kind: 'sentinel'; sentinels: RedisNode[]; masterName: string; username?: string; password?: string; sentinelPassword?: string; tls: boolean };

// scheme://[user[:password]@]host:port[,host:port…][/path][?query]
const MULTI_HOST = /^(rediss?)\+(cluster|sentinel):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)(?:\/([^?#]*))?(?:\?([^#]*))?$/;

function nodesOf(list: string, url: string): RedisNode[] {
  return list.split(',').map((part) => {
    const m = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(part.trim());
    const port = m ? Number(m[2]) : NaN;
    if (!m || port < 1 || port > 65535) throw new Error(`"${part}" in ${url.replace(/\/\/[^@/]*@/, '//***@')} is not host:port`);
    return { host: m[1].replace(/^\[|\]$/g, ''), port };
  });
}

/**
 * Parses `REDIS_URL`: `redis://` or `rediss://` (one Redis, TLS with the second),
 * `redis+cluster://h1:p1,h2:p2,…` (a Cluster, any reachable nodes to start from) or
 * `redis+sentinel://h1:p1,h2:p2,…/<master-name>` (Sentinel; `?sentinel_password=` if the
 * Sentinels want one); `rediss+…` for TLS; user and password as in any Redis URL. Throws an
 * Error whose message says what is wrong, without the password.
 */
export function parseRedisUrl(url: string): RedisTarget {
  if (/^rediss?:\/\//.test(url)) {
    try {
      new URL(url);
    } catch {
      throw new Error('is not a valid URL (redis://[user:password@]host:port[/db])');
    }
    return { kind: 'single', url, tls: url.startsWith('rediss:') };
  }
  const m = MULTI_HOST.exec(url);
  if (!m) throw new Error('must be redis://, rediss://, redis+cluster://host:port,… or redis+sentinel://host:port,…/<master-name>');
  const [, scheme, kind, user, pass, hosts, path, query] = m;
  const auth = { ...(user ? { username: decodeURIComponent(user) } : {}), ...(pass ? { password: decodeURIComponent(pass) } : {}) };
  const tls = scheme === 'rediss';
  if (kind === 'cluster') {
    if (path) throw new Error('a cluster URL has no path (no database: a Cluster has only db 0)');
    return { kind: 'cluster', nodes: nodesOf(hosts, url), tls, ...auth };
  }
  if (!path || !/^[A-Za-z0-9._-]+$/.test(path)) throw new Error('a sentinel URL ends with /<master-name> (letters, digits, . _ -)');
  const sentinelPassword = new URLSearchParams(query ?? '').get('sentinel_password') ?? undefined;
  return { kind: 'sentinel', sentinels: nodesOf(hosts, url), masterName: path, tls, ...auth, ...(sentinelPassword ? { sentinelPassword } : {}) };
}
