import type { LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { boundedDnsResolver, privateNetworkResolver } from './dns-resolver.js';
import { FatalError } from '../core/errors.js';

/** Resolves a host name to every address it has (by default boundedDnsResolver's DNS queries; a test's own). */
export type Resolver = (host: string, options: { all: true; verbatim: true }) => Promise<LookupAddress[]>;

const defaultResolver: Resolver = boundedDnsResolver();
/**
 * Where private addresses are allowed, names resolve in the system's order (`/etc/hosts`, then
 * DNS, with the search domains for short names), as a private network's names need; bounded in
 * time and in the threads it holds (privateNetworkResolver).
 */
const privateResolver: Resolver = privateNetworkResolver();

// IANA's global unicast space; outside it, ipaddr.js calls many reserved blocks `unicast`
// (`::a.b.c.d`, `4000::/2`, …).
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

/**
 * True only for a global unicast address: refused are IPv4's loopback, private, link-local,
 * CGNAT, multicast, reserved, documentation and benchmarking blocks (every range ipaddr.js
 * names), and every IPv6 address outside 2000::/3 or in a block ipaddr.js names: IPv4-mapped
 * and -compatible forms, 6to4, NAT64, Teredo, site- and unique-local, discard, documentation.
 * Forms that embed an IPv4 address are refused whatever it embeds: none is a global unicast
 * address of its own, and their embedded address is where a packet may end up.
 */
export function isPublicAddress(ip: string): boolean {
  if (!isIP(ip)) return false;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(ip);
  } catch {
    return false;
  }
  if (addr.kind() === 'ipv4') return addr.range() === 'unicast';
  const v6 = addr as ipaddr.IPv6;
  return v6.range() === 'unicast' && v6.match(GLOBAL_UNICAST_V6);
}

/** True if `ip` is not a public unicast address (see isPublicAddress). */
export const isPrivateAddress = (ip: string): boolean => !isPublicAddress(ip);

/** A connection refused because its host resolved to an address that is not public. */
export class NonPublicAddressError extends FatalError {
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(
      `${host === address ? 'the address' : `host "${host}" resolves to`} ${address}, ` +
        `which is not a public address; set WEBHOOK_ALLOW_PRIVATE=true to allow it`,
      'non_public_address',
    );
  }
}

/** The URL's host without IPv6 brackets, or null if it is no URL. */
function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return null;
  }
}

const LOCALHOST = /^localhost\.?$|\.localhost\.?$/i;

/**
 * Why a URL may not be called, as far as its text tells (a name of loopback, an address that
 * is not public), or null: what is left to check is what its name resolves to.
 */
export function refuseNonPublicHost(url: string): string | null {
  const host = hostOf(url);
  if (host === null) return 'is not a valid URL';
  if (LOCALHOST.test(host)) return `names a loopback host (${host})`;
  if (isIP(host) && !isPublicAddress(host))
    return `is a non-public address (${host}); set WEBHOOK_ALLOW_PRIVATE=true to allow it`;
  return null;
}

/**
 * Resolves a URL's host and says why it may not be called, or null if every address it
 * resolves to is public. This is the check at submission; a connection is checked again where
 * it is made (connectLookup), since DNS may answer differently then.
 */
export async function refuseNonPublicUrl(url: string, resolve: Resolver = defaultResolver): Promise<string | null> {
  const why = refuseNonPublicHost(url);
  if (why) return why;
  const host = hostOf(url)!;
  if (isIP(host)) return null;
  let addresses: string[];
  try {
    addresses = (await resolve(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ETIMEOUT'
      ? `host "${host}" did not resolve in time (ETIMEOUT)`
      : `host "${host}" does not resolve (${code ?? 'DNS error'})`;
  }
  if (addresses.length === 0) return `host "${host}" does not resolve`;
  const bad = addresses.find(isPrivateAddress);
  return bad ? `resolves to a non-public address (${bad}); set WEBHOOK_ALLOW_PRIVATE=true to allow it` : null;
}

/**
 * A `lookup` for `net.connect` (and so for `http.request`): resolves with `resolve` and, unless
 * `allowPrivate`, fails with NonPublicAddressError when any address of the host is not public.
 * The socket then connects to an address this very lookup checked, so a name that answers
 * differently from one lookup to the next (DNS rebinding) cannot lead it elsewhere.
 * (`net.connect` does not look up a host that is an IP address: check those with refuseNonPublicHost.)
 */
export function connectLookup(opts: { resolve?: Resolver; allowPrivate?: boolean } = {}): LookupFunction {
  const resolve = opts.resolve ?? (opts.allowPrivate ? privateResolver : defaultResolver);
  return (hostname, options, callback) => {
    const answer = async (): Promise<LookupAddress[]> => {
      const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
      const all = (await resolve(hostname, { all: true, verbatim: true })).filter(
        (a) => !family || a.family === family,
      );
      if (all.length === 0)
        throw Object.assign(new Error(`host "${hostname}" has no address${family ? ` of IPv${family}` : ''}`), {
          code: 'ENOTFOUND',
          hostname,
        });
      const bad = opts.allowPrivate ? undefined : all.find((a) => !isPublicAddress(a.address));
      if (bad) throw new NonPublicAddressError(hostname, bad.address);
      return all;
    };
    answer().then(
      (all) => (options.all ? callback(null, all) : callback(null, all[0].address, all[0].family)),
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}
