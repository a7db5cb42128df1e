import { Resolver as CaresResolver, lookup as systemLookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';

/** How long one name's lookup may take in all, by default (both address families, every try). */
export const DNS_LOOKUP_TIMEOUT_MS = 5_000;

/** How long the other address family may take once one has answered with addresses. */
const OTHER_FAMILY_GRACE_MS = 250;

/**
 * A resolver for names that callers choose (webhook hosts): DNS queries through c-ares, each
 * lookup bounded in time. Not `dns.lookup`: its `getaddrinfo` runs on libuv's four threads with
 * no timeout of its own, so four names whose DNS never answers would hold every lookup (and the
 * file and crypto work on those threads) of the process behind them. Here a slow name costs only
 * its own lookup. It asks DNS alone, as `/etc/resolv.conf` says (or `servers`), not
 * `/etc/hosts`; `localhost` and `*.localhost` are loopback without a query (RFC 6761).
 */
export function boundedDnsResolver(opts: { timeoutMs?: number; servers?: string[] } = {}) {
  const timeoutMs = opts.timeoutMs ?? DNS_LOOKUP_TIMEOUT_MS;
  return async (host: string): Promise<LookupAddress[]> => {
    const name = host.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost'))
      return [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ];
    // A channel per lookup: cancelling it at the deadline ends this lookup's queries, no other's.
    const channel = new CaresResolver({ timeout: Math.max(1, Math.floor(timeoutMs / 2)), tries: 2 });
    if (opts.servers) channel.setServers(opts.servers);
    let timer = setTimeout(() => channel.cancel(), timeoutMs);
    // Once one family has addresses, the other gets a moment more: a DNS that drops AAAA queries
    // must not cost every lookup its whole timeout.
    const shorten = (addresses: string[]) => {
      if (addresses.length === 0) return;
      clearTimeout(timer);
      timer = setTimeout(() => channel.cancel(), OTHER_FAMILY_GRACE_MS);
    };
    const v4Query = channel.resolve4(name);
    const v6Query = channel.resolve6(name);
    v4Query.then(shorten, () => {});
    v6Query.then(shorten, () => {});
    try {
      const [v4, v6] = await Promise.allSettled([v4Query, v6Query]);
      const found: LookupAddress[] = [
        ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
        ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
      ];
      if (found.length > 0) return found;
      const err = (
        v4.status === 'rejected' ? v4.reason : v6.status === 'rejected' ? v6.reason : null
      ) as NodeJS.ErrnoException | null;
      const code = err?.code === 'ECANCELLED' || err?.code === 'ETIMEOUT' ? 'ETIMEOUT' : (err?.code ?? 'ENOTFOUND');
      const why =
        code === 'ETIMEOUT' ? `DNS did not answer within ${timeoutMs} ms` : `DNS has no address for it (${code})`;
      throw Object.assign(new Error(`host "${host}" does not resolve: ${why}`), { code, hostname: host });
    } finally {
      clearTimeout(timer);
    }
  };
}

/** How many system lookups of caller-chosen names may hold a libuv thread at once, by default. */
export const SYSTEM_LOOKUPS_IN_FLIGHT = 2;

type SystemLookup = (host: string, options: { all: true; verbatim: true }) => Promise<LookupAddress[]>;

/**
 * The system's resolver (`getaddrinfo`: `/etc/hosts`, search domains, as a private network's
 * short names need) for names that callers choose, bounded twice: each lookup answers within
 * `timeoutMs` (waiting for a slot included), and at most `maxInFlight` lookups hold one of
 * libuv's threads at once (four unless UV_THREADPOOL_SIZE says otherwise), so names whose DNS
 * never answers cannot hold every thread of the process. A `getaddrinfo` cannot be cancelled:
 * one past its deadline keeps its slot until the system gives up on it, and lookups behind it
 * wait for a slot or their own deadline.
 */
export function boundedSystemResolver(opts: { timeoutMs?: number; maxInFlight?: number; lookup?: SystemLookup } = {}) {
  const timeoutMs = opts.timeoutMs ?? DNS_LOOKUP_TIMEOUT_MS;
  const maxInFlight = Math.max(1, opts.maxInFlight ?? SYSTEM_LOOKUPS_IN_FLIGHT);
  const lookup: SystemLookup = opts.lookup ?? ((host, options) => systemLookup(host, options));
  let inFlight = 0;
  const waiting: Array<() => void> = [];
  const release = () => {
    inFlight--;
    waiting.shift()?.();
  };
  return (host: string): Promise<LookupAddress[]> =>
    new Promise<LookupAddress[]>((resolve, reject) => {
      let settled = false;
      const start = () => {
        inFlight++;
        // (A lookup that throws at once still settles here, and gives its slot back.)
        Promise.resolve()
          .then(() => lookup(host, { all: true, verbatim: true }))
          .then(
            (found) => finish(() => resolve(found)),
            (err: unknown) => finish(() => reject(err)),
          );
      };
      const finish = (answer: () => void) => {
        release();
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        answer();
      };
      const timer = setTimeout(() => {
        settled = true;
        const queued = waiting.indexOf(start);
        if (queued >= 0) waiting.splice(queued, 1);
        reject(
          Object.assign(
            new Error(`host "${host}" does not resolve: the system's resolver did not answer within ${timeoutMs} ms`),
            { code: 'ETIMEOUT', hostname: host },
          ),
        );
      }, timeoutMs);
      if (inFlight < maxInFlight) start();
      else waiting.push(start);
    });
}

/** How long a hosts file read is used before it is read again. */
const HOSTS_FILE_MAX_AGE_MS = 5_000;

/**
 * The addresses a hosts file (`/etc/hosts`) gives names, read again at most every few seconds:
 * what the system's resolver would answer from it, without taking one of libuv's threads for
 * a `getaddrinfo`. A file that cannot be read gives nothing.
 */
export function hostsFileLookup(path = '/etc/hosts') {
  let table: Map<string, LookupAddress[]> | null = null;
  let readAt = 0;
  let reading: Promise<Map<string, LookupAddress[]>> | null = null;
  const load = async () => {
    const text = await readFile(path, 'utf8').catch(() => '');
    const next = new Map<string, LookupAddress[]>();
    for (const raw of text.split('\n')) {
      const [address, ...names] = raw.replace(/#.*/, '').trim().split(/\s+/);
      const family = address ? isIP(address) : 0;
      if (!family) continue;
      for (const name of names) {
        const key = name.toLowerCase().replace(/\.$/, '');
        const list = next.get(key) ?? [];
        if (!list.some((a) => a.address === address)) list.push({ address, family });
        next.set(key, list);
      }
    }
    table = next;
    readAt = Date.now();
    return next;
  };
  return async (host: string): Promise<LookupAddress[]> => {
    let fresh = table;
    if (!fresh || Date.now() - readAt >= HOSTS_FILE_MAX_AGE_MS) {
      // One read at a time: lookups while the file is read wait for that read.
      reading ??= load().finally(() => {
        reading = null;
      });
      fresh = await reading;
    }
    return fresh.get(host.toLowerCase().replace(/\.$/, '')) ?? [];
  };
}

/**
 * The resolver for webhook hosts where private addresses are allowed (WEBHOOK_ALLOW_PRIVATE), in
 * the system's order without its threads where it can: the hosts file first (`/etc/hosts`); a
 * short name (no dot), which needs the search domains, from the system's resolver
 * (boundedSystemResolver); any other name from DNS queries (boundedDnsResolver), and the system's
 * resolver only for one they find no address for (or where DNS refuses, or no server listens).
 * A name whose DNS never answers times out in the DNS queries and never reaches a libuv thread.
 * At most twice `timeoutMs`.
 */
export function privateNetworkResolver(
  opts: {
    timeoutMs?: number;
    servers?: string[];
    maxInFlight?: number;
    lookup?: SystemLookup;
    hostsPath?: string;
  } = {},
) {
  const hosts = hostsFileLookup(opts.hostsPath);
  const dns = boundedDnsResolver(opts);
  const system = boundedSystemResolver(opts);
  return async (host: string): Promise<LookupAddress[]> => {
    const listed = await hosts(host);
    if (listed.length > 0) return listed;
    if (!host.replace(/\.$/, '').includes('.')) return system(host);
    try {
      return await dns(host);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ETIMEOUT') throw err;
      return system(host);
    }
  };
}
