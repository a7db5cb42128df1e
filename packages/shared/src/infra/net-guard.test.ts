import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import {
  connectLookup,
  isPublicAddress,
  NonPublicAddressError,
  refuseNonPublicHost,
  refuseNonPublicUrl,
  type Resolver,
} from './net-guard.js';

describe('isPublicAddress', () => {
  it.each([
    // IPv4
    ['unspecified', '0.0.0.0'],
    ['"this network"', '0.1.2.3'],
    ['private 10/8', '10.1.2.3'],
    ['CGNAT', '100.64.0.1'],
    ['loopback', '127.0.0.1'],
    ['loopback, end of 127/8', '127.255.255.254'],
    ['link-local (cloud metadata)', '169.254.169.254'],
    ['private 172.16/12', '172.16.0.1'],
    ['private 172.16/12, its end', '172.31.255.255'],
    ['IETF protocol assignments', '192.0.0.8'],
    ['TEST-NET-1', '192.0.2.1'],
    ['6to4 relay anycast', '192.88.99.1'],
    ['private 192.168/16', '192.168.1.1'],
    ['benchmarking', '198.18.0.1'],
    ['TEST-NET-2', '198.51.100.7'],
    ['TEST-NET-3', '203.0.113.9'],
    ['multicast', '224.0.0.1'],
    ['reserved 240/4', '240.0.0.1'],
    ['broadcast', '255.255.255.255'],
    // IPv6
    ['unspecified', '::'],
    ['loopback', '::1'],
    ['IPv4-compatible loopback', '::127.0.0.1'],
    ['IPv4-compatible loopback, hex', '::7f00:1'],
    ['IPv4-compatible public (deprecated form)', '::8.8.8.8'],
    ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
    ['IPv4-mapped loopback, hex', '::ffff:7f00:1'],
    ['IPv4-mapped private, expanded', '0:0:0:0:0:ffff:10.0.0.1'],
    ['IPv4-mapped metadata', '::ffff:169.254.169.254'],
    ['IPv4-mapped public', '::ffff:8.8.8.8'],
    ['IPv4-translated (::ffff:0:0:0/96) loopback', '::ffff:0:127.0.0.1'],
    ['IPv4-translated private, hex', '::ffff:0:a00:1'],
    ['6to4 of 127.0.0.1', '2002:7f00:1::1'],
    ['6to4 of 192.168.1.1', '2002:c0a8:101::1'],
    ['6to4 of 10.0.0.1', '2002:a00:1::'],
    ['6to4 of a public address', '2002:808:808::1'],
    ['NAT64 of 127.0.0.1', '64:ff9b::7f00:1'],
    ['NAT64 of 10.0.0.1, dotted', '64:ff9b::10.0.0.1'],
    ['NAT64 of a public address', '64:ff9b::8.8.8.8'],
    ['local-use NAT64 (64:ff9b:1::/48)', '64:ff9b:1::a00:1'],
    ['Teredo', '2001::1'],
    ['Teredo, a full address', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
    ['site-local (fec0::/10)', 'fec0::1'],
    ['site-local, its end', 'feff::1'],
    ['link-local', 'fe80::1'],
    ['link-local with a zone', 'fe80::1%eth0'],
    ['unique local', 'fc00::1'],
    ['unique local fd', 'fd12:3456::1'],
    ['multicast', 'ff02::1'],
    ['discard (100::/64)', '100::1'],
    ['discard, its end', '100::ffff:ffff:ffff:ffff'],
    ['documentation', '2001:db8::1'],
    ['documentation (3fff::/20)', '3fff::1'],
    ['benchmarking', '2001:2::1'],
    ['ORCHIDv2', '2001:20::1'],
    ['segment routing', '5f00::1'],
    ['outside 2000::/3', '4000::1'],
    ['outside 2000::/3, low', '1::1'],
    // not addresses
    ['a name', 'localhost'],
    ['nothing', ''],
    ['three parts', '1.2.3'],
  ])('refuses %s: %s', (_label, ip) => {
    expect(isPublicAddress(ip)).toBe(false);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '100.63.255.255',
    '100.128.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '192.167.255.255',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450:4001:81b::200e',
    '2c0f:fb50:4003::1',
  ])('allows the public address %s', (ip) => {
    expect(isPublicAddress(ip)).toBe(true);
  });
});

describe('refuseNonPublicHost and refuseNonPublicUrl', () => {
  it.each([
    'http://localhost/hook',
    'http://LOCALHOST./hook',
    'http://hooks.localhost/hook',
    'http://127.1/hook', // the URL parser reads it as 127.0.0.1
    'http://2130706433/hook',
    'http://0x7f.1/hook',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::127.0.0.1]/hook',
    'http://[2002:7f00:1::1]/hook',
    'http://[64:ff9b::a9fe:a9fe]/latest/meta-data',
    'not a url',
  ])('refuses %s by its text alone', async (url) => {
    expect(refuseNonPublicHost(url)).toBeTypeOf('string');
    expect(await refuseNonPublicUrl(url, () => Promise.reject(new Error('must not resolve')))).toBeTypeOf('string');
  });

  it('refuses a name when any of its addresses is not public, and allows one whose addresses all are', async () => {
    const dns =
      (addresses: string[]): Resolver =>
      async () =>
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    expect(
      await refuseNonPublicUrl('https://hooks.example.com/x', dns(['8.8.8.8', '2606:4700:4700::1111'])),
    ).toBeNull();
    expect(await refuseNonPublicUrl('https://hooks.example.com/x', dns(['8.8.8.8', '::ffff:10.0.0.1']))).toContain(
      '::ffff:10.0.0.1',
    );
    expect(await refuseNonPublicUrl('https://hooks.example.com/x', dns([]))).toContain('does not resolve');
    expect(
      await refuseNonPublicUrl('https://hooks.example.com/x', () =>
        Promise.reject(Object.assign(new Error('no'), { code: 'ENOTFOUND' })),
      ),
    ).toContain('ENOTFOUND');
  });
});

describe('connectLookup', () => {
  const dns =
    (addresses: string[]): Resolver =>
    async () =>
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  const ask = (lookup: ReturnType<typeof connectLookup>, options: { all?: boolean; family?: number }) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((resolve) =>
      lookup('hooks.example.com', options, (err, address, family) => resolve({ err, address, family })),
    );

  it('answers what the resolver says when every address is public, one or all, of the family asked', async () => {
    const lookup = connectLookup({ resolve: dns(['8.8.8.8', '2606:4700:4700::1111']) });
    expect(await ask(lookup, {})).toMatchObject({ err: null, address: '8.8.8.8', family: 4 });
    expect((await ask(lookup, { all: true })).address).toEqual([
      { address: '8.8.8.8', family: 4 },
      { address: '2606:4700:4700::1111', family: 6 },
    ]);
    expect(await ask(lookup, { family: 6 })).toMatchObject({ err: null, address: '2606:4700:4700::1111', family: 6 });
  });

  it('fails the connection when any address is not public', async () => {
    for (const addresses of [['127.0.0.1'], ['8.8.8.8', '10.0.0.1'], ['::ffff:127.0.0.1'], ['2002:7f00:1::1']]) {
      const { err } = await ask(connectLookup({ resolve: dns(addresses) }), { all: true });
      expect(err).toBeInstanceOf(NonPublicAddressError);
      expect(err!.message).toContain('hooks.example.com');
    }
  });

  it('lets private addresses through when allowed, and passes resolver errors on', async () => {
    expect(await ask(connectLookup({ resolve: dns(['127.0.0.1']), allowPrivate: true }), {})).toMatchObject({
      err: null,
      address: '127.0.0.1',
    });
    const failing = connectLookup({
      resolve: () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' })),
    });
    expect((await ask(failing, {})).err?.code).toBe('ENOTFOUND');
    expect((await ask(connectLookup({ resolve: dns(['8.8.8.8']) }), { family: 6 })).err?.code).toBe('ENOTFOUND');
  });
});
