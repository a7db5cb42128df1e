/** A host and port of a Redis node or Sentinel. */
export interface RedisNode {
  host: string;
  port: number;
}

/** What `REDIS_URL` names: one Redis, a Redis Cluster, or a Sentinel group. */
export type RedisTarget =
  | { kind: 'single'; url: string; tls: boolean }
  | { kind: 'cluster'; nodes: RedisNode[]; username?: string; password?: string; tls: boolean }
  | {
      kind: 'sentinel';
      sentinels: RedisNode[];
      masterName: string;
      username?: string;
      password?: string;
      sentinelPassword?: string;
      tls: boolean;
    };

// scheme://[user[:password]@]host:port[,host:port…][/path][?query]
const MULTI_HOST =
  /^(rediss?)\+(cluster|sentinel):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)(?:\/([^?#]*))?(?:\?([^#]*))?$/;

/**
 * A URL as it may be shown: whatever comes between `//` and its last `@` (user and password,
 * whatever characters the password has) and the value of `sentinel_password` are hidden.
 */
export function redactUrl(url: string): string {
  return url.replace(/\/\/.*@/, '//***@').replace(/(sentinel_password=)[^&#]*/gi, '$1***');
}

/**
 * A percent-encoded part of a URL, decoded; an error that names the part (never its value) if it is not valid
 * percent-encoding.
 */
function decoded(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new Error(
      `the ${what} in the URL is not valid percent-encoding: ` +
        `write a % in it as %25 (and an @ / : ? # as %40 %2F %3A %3F %23)`,
    );
  }
}

function nodesOf(list: string, url: string): RedisNode[] {
  // An @ past the user and password is part of a password that was not percent-encoded.
  if (list.includes('@'))
    throw new Error('the password in the URL has an @ or / that is not percent-encoded: write them as %40 and %2F');
  return list.split(',').map((part) => {
    const m = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(part.trim());
    const port = m ? Number(m[2]) : NaN;
    if (!m || port < 1 || port > 65535) throw new Error(`"${part}" in ${redactUrl(url)} is not host:port`);
    return { host: m[1].replace(/^\[|\]$/g, ''), port };
  });
}

/** The value of one query parameter, percent-decoded as the password is (a `+` stays a `+`). */
function queryParam(query: string | undefined, name: string): string | undefined {
  for (const pair of (query ?? '').split('&')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq) === name) return decoded(pair.slice(eq + 1), name);
  }
  return undefined;
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
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Error('is not a valid URL (redis://[user:password@]host:port[/db])');
    }
    // The client decodes them again, and would throw on a stray %.
    decoded(parsed.username, 'user');
    decoded(parsed.password, 'password');
    return { kind: 'single', url, tls: url.startsWith('rediss:') };
  }
  const m = MULTI_HOST.exec(url);
  if (!m)
    throw new Error(
      'must be redis://, rediss://, redis+cluster://host:port,… or redis+sentinel://host:port,…/<master-name>',
    );
  const [, scheme, kind, user, pass, hosts, path, query] = m;
  const auth = {
    ...(user ? { username: decoded(user, 'user') } : {}),
    ...(pass ? { password: decoded(pass, 'password') } : {}),
  };
  const tls = scheme === 'rediss';
  if (kind === 'cluster') {
    if (path) throw new Error('a cluster URL has no path (no database: a Cluster has only db 0)');
    if (query) throw new Error('a cluster URL takes no ?query (TLS is rediss+cluster://)');
    return { kind: 'cluster', nodes: nodesOf(hosts, url), tls, ...auth };
  }
  if (!path || !/^[A-Za-z0-9._-]+$/.test(path))
    throw new Error('a sentinel URL ends with /<master-name> (letters, digits, . _ -)');
  const unknown = (query ?? '').split('&').filter((p) => p && !p.startsWith('sentinel_password='));
  if (unknown.length) throw new Error('a sentinel URL takes only ?sentinel_password= (TLS is rediss+sentinel://)');
  const sentinelPassword = queryParam(query, 'sentinel_password');
  return {
    kind: 'sentinel',
    sentinels: nodesOf(hosts, url),
    masterName: path,
    tls,
    ...auth,
    ...(sentinelPassword ? { sentinelPassword } : {}),
  };
}
