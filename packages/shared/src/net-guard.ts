import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

// Addresses a webhook must not reach unless WEBHOOK_ALLOW_PRIVATE: loopback, private,
// link-local, CGNAT, benchmarking, multicast, reserved, and their IPv6 equivalents.
const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['64:ff9b::', 96],
] as const)
  blocked.addSubnet(net, bits, 'ipv6');

/** True if `ip` is not a public unicast address. */
export function isPrivateAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return blocked.check(ip, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
    if (mapped) return blocked.check(mapped[1], 'ipv4');
    return blocked.check(ip, 'ipv6');
  }
  return true;
}

/**
 * Resolves a URL's host and says why it may not be called, or null if every address it
 * resolves to is public. DNS can change, so webhook delivery checks again before each attempt.
 */
export async function refuseNonPublicUrl(url: string, resolve: typeof lookup = lookup): Promise<string | null> {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return 'is not a valid URL';
  }
  if (/^localhost$|\.localhost$/i.test(host)) return `resolves to a loopback address (${host})`;
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await resolve(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch (err) {
      return `host "${host}" does not resolve (${(err as NodeJS.ErrnoException).code ?? 'DNS error'})`;
    }
  }
  const bad = addresses.find(isPrivateAddress);
  return bad ? `resolves to a non-public address (${bad}); set WEBHOOK_ALLOW_PRIVATE=true to allow it` : null;
}
