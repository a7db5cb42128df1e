import { createSocket, type Socket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LookupAddress } from 'node:dns';
import { boundedDnsResolver, boundedSystemResolver, privateNetworkResolver } from './dns-resolver.js';

/**
 * A DNS server on loopback (UDP): answers A queries for names in `records`, an empty answer
 * otherwise (NODATA), and does not answer names in `silent` at all, nor AAAA queries for names in
 * `silentForAaaa`.
 */
async function startDnsServer(
  records: Record<string, string>,
  silent: Set<string>,
  silentForAaaa = new Set<string>(),
): Promise<{ server: string; queries: string[]; close: () => void }> {
  const socket: Socket = createSocket('udp4');
  const queries: string[] = [];
  socket.on('message', (msg, from) => {
    // The question: labels from byte 12, then QTYPE and QCLASS.
    const labels: string[] = [];
    let at = 12;
    while (msg[at] !== 0) {
      labels.push(msg.subarray(at + 1, at + 1 + msg[at]).toString('latin1'));
      at += msg[at] + 1;
    }
    const questionEnd = at + 5;
    const name = labels.join('.');
    const qtype = msg.readUInt16BE(at + 1);
    queries.push(name);
    if (silent.has(name) || (qtype === 28 && silentForAaaa.has(name))) return;
    const address = qtype === 1 ? records[name] : undefined;
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2);
    header.writeUInt16BE(0x8180, 2); // a response, recursion available, no error
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(address ? 1 : 0, 6);
    const answer = address
      ? Buffer.concat([
          Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]),
          Buffer.from(address.split('.').map(Number)),
        ])
      : Buffer.alloc(0);
    socket.send(Buffer.concat([header, msg.subarray(12, questionEnd), answer]), from.port, from.address);
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  return { server: `127.0.0.1:${socket.address().port}`, queries, close: () => socket.close() };
}

describe('boundedDnsResolver', () => {
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  beforeAll(async () => {
    dns = await startDnsServer(
      { 'hooks.example': '93.184.216.34', 'v4only.example': '93.184.216.35' },
      new Set(['never.example']),
      new Set(['v4only.example']),
    );
  });
  afterAll(() => dns.close());

  it('resolves a name through DNS', async () => {
    const resolve = boundedDnsResolver({ servers: [dns.server] });
    expect(await resolve('hooks.example')).toEqual([{ address: '93.184.216.34', family: 4 }]);
  });

  it('fails a name DNS does not answer with ETIMEOUT at its deadline, and a name without an address with ENODATA', async () => {
    const resolve = boundedDnsResolver({ servers: [dns.server], timeoutMs: 400 });
    const started = performance.now();
    await expect(resolve('never.example')).rejects.toMatchObject({
      code: 'ETIMEOUT',
      message: expect.stringMatching(/never\.example.*did not answer within 400 ms/),
    });
    // It gave up at its deadline.
    expect(performance.now() - started).toBeGreaterThanOrEqual(390);
    expect(performance.now() - started).toBeLessThan(3_000);
    await expect(resolve('nothing.example')).rejects.toMatchObject({ code: 'ENODATA' });
  });

  it('a name whose DNS never answers holds up no other: twelve such lookups in flight, another name still resolves', async () => {
    const resolve = boundedDnsResolver({ servers: [dns.server], timeoutMs: 3_000 });
    let pending = 12;
    const stuck = Array.from({ length: 12 }, () => resolve('never.example').finally(() => pending--));
    // (getaddrinfo on libuv's four threads would queue this behind four of them.)
    expect(await resolve('hooks.example')).toEqual([{ address: '93.184.216.34', family: 4 }]);
    expect(pending).toBe(12);
    const outcomes = await Promise.allSettled(stuck);
    expect(
      outcomes.every((o) => o.status === 'rejected' && (o.reason as NodeJS.ErrnoException).code === 'ETIMEOUT'),
    ).toBe(true);
  });

  it('a name whose DNS answers A and drops AAAA queries resolves to its IPv4 address without waiting out the timeout', async () => {
    const resolve = boundedDnsResolver({ servers: [dns.server], timeoutMs: 20_000 });
    const started = performance.now();
    expect(await resolve('v4only.example')).toEqual([{ address: '93.184.216.35', family: 4 }]);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('answers localhost without a query', async () => {
    const resolve = boundedDnsResolver({ servers: [dns.server] });
    const before = dns.queries.length;
    expect(await resolve('localhost')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    expect(await resolve('api.localhost.')).toHaveLength(2);
    expect(dns.queries.length).toBe(before);
  });
});

/**
 * A system lookup under the test's control: records each call; answers `answers[host]`, never answers other
 * names until released.
 */
function heldLookup(answers: Record<string, LookupAddress[]>) {
  const calls: string[] = [];
  const held: Array<() => void> = [];
  const lookup = (host: string) => {
    calls.push(host);
    const found = answers[host];
    if (found) return Promise.resolve(found);
    return new Promise<LookupAddress[]>((_, reject) =>
      held.push(() => reject(Object.assign(new Error('EAI_AGAIN'), { code: 'EAI_AGAIN' }))),
    );
  };
  return { lookup, calls, releaseOne: () => held.shift()?.() };
}

describe('boundedSystemResolver', () => {
  it("resolves through the system's resolver (/etc/hosts)", async () => {
    const found = await boundedSystemResolver()('localhost');
    expect(found.length).toBeGreaterThan(0);
    expect(found.every((a) => a.address === '127.0.0.1' || a.address === '::1')).toBe(true);
  });

  it('holds at most maxInFlight lookups at once, fails each at its deadline, and gives a freed slot to the next lookup', async () => {
    const sys = heldLookup({ intranet: [{ address: '10.0.0.5', family: 4 }] });
    const resolve = boundedSystemResolver({ lookup: sys.lookup, maxInFlight: 2, timeoutMs: 300 });
    const started = performance.now();
    const stuck = await Promise.allSettled(['a.never', 'b.never', 'c.never', 'd.never'].map((h) => resolve(h)));
    expect(stuck.map((o) => o.status === 'rejected' && (o.reason as NodeJS.ErrnoException).code)).toEqual([
      'ETIMEOUT',
      'ETIMEOUT',
      'ETIMEOUT',
      'ETIMEOUT',
    ]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    // Only two reached the system (two threads); the other two waited for a slot until their deadline.
    expect(sys.calls).toEqual(['a.never', 'b.never']);
    // Both slots are still held by lookups the system has not given up on: the next one waits.
    const next = resolve('intranet');
    sys.releaseOne();
    expect(await next).toEqual([{ address: '10.0.0.5', family: 4 }]);
    expect(sys.calls).toEqual(['a.never', 'b.never', 'intranet']);
  });

  it('a lookup that throws at once fails its own lookup and gives its slot back', async () => {
    let calls = 0;
    const resolve = boundedSystemResolver({
      maxInFlight: 1,
      timeoutMs: 1_000,
      lookup: (host) => {
        calls++;
        if (host === 'bad') throw Object.assign(new Error('EAI_FAIL'), { code: 'EAI_FAIL' });
        return Promise.resolve([{ address: '10.0.0.7', family: 4 }]);
      },
    });
    await expect(resolve('bad')).rejects.toMatchObject({ code: 'EAI_FAIL' });
    expect(await resolve('good')).toEqual([{ address: '10.0.0.7', family: 4 }]);
    expect(calls).toBe(2);
  });
});

describe('privateNetworkResolver (WEBHOOK_ALLOW_PRIVATE)', () => {
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  let dir: string;
  let hostsPath: string;
  beforeAll(async () => {
    dns = await startDnsServer(
      { 'hooks.example': '10.1.2.3', 'listed.example': '93.184.216.40' },
      new Set(['never.example']),
    );
    dir = mkdtempSync(join(tmpdir(), 'agentq-hosts-'));
    hostsPath = join(dir, 'hosts');
    writeFileSync(
      hostsPath,
      '# a hosts file\n10.9.9.9  listed.example listed   # overrides DNS\n' +
        'fe80::1 listed.example\nnot-an-address nowhere.example\n',
    );
  });
  afterAll(() => {
    dns.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes the hosts file first, as the system does, without a DNS query or a thread', async () => {
    const sys = heldLookup({});
    const resolve = privateNetworkResolver({ servers: [dns.server], lookup: sys.lookup, hostsPath });
    const before = dns.queries.length;
    expect(await resolve('Listed.Example.')).toEqual([
      { address: '10.9.9.9', family: 4 },
      { address: 'fe80::1', family: 6 },
    ]);
    expect(await resolve('listed')).toEqual([{ address: '10.9.9.9', family: 4 }]);
    expect(dns.queries.length).toBe(before);
    expect(sys.calls).toEqual([]);
  });

  it('asks DNS next, and the system only for a name DNS has no address for, or a short name (search domains)', async () => {
    const sys = heldLookup({
      'intranet.corp': [{ address: '10.0.0.5', family: 4 }],
      intranet: [{ address: '10.0.0.6', family: 4 }],
    });
    const resolve = privateNetworkResolver({ servers: [dns.server], lookup: sys.lookup, timeoutMs: 2_000, hostsPath });
    expect(await resolve('hooks.example')).toEqual([{ address: '10.1.2.3', family: 4 }]);
    expect(sys.calls).toEqual([]);
    expect(await resolve('intranet.corp')).toEqual([{ address: '10.0.0.5', family: 4 }]);
    expect(dns.queries).toContain('intranet.corp');
    const before = dns.queries.length;
    expect(await resolve('intranet')).toEqual([{ address: '10.0.0.6', family: 4 }]);
    expect(dns.queries.length).toBe(before);
    expect(sys.calls).toEqual(['intranet.corp', 'intranet']);
  });

  it('a name whose DNS never answers times out without taking a thread', async () => {
    const sys = heldLookup({});
    const resolve = privateNetworkResolver({ servers: [dns.server], lookup: sys.lookup, timeoutMs: 400, hostsPath });
    await expect(resolve('never.example')).rejects.toMatchObject({ code: 'ETIMEOUT' });
    expect(sys.calls).toEqual([]);
  });
});
