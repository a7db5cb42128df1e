import { describe, expect, it } from 'vitest';
import { redisProblem } from './redis-reachable.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('redisProblem', () => {
  it('names what to fix: credentials, the certificate, the host, the kind of port', () => {
    expect(redisProblem(new Error('WRONGPASS invalid username-password pair or user is disabled.'))).toMatch(
      /^Redis refused the user or password in REDIS_URL \(WRONGPASS/,
    );
    expect(redisProblem(new Error('NOAUTH Authentication required.'))).toMatch(
      /^Redis wants a password and REDIS_URL gives none/,
    );
    expect(redisProblem(withCode('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT'))).toMatch(
      /not trusted \(self-signed certificate\); for a private CA, set NODE_EXTRA_CA_CERTS/,
    );
    expect(redisProblem(withCode('unable to verify the first certificate', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'))).toMatch(
      /not trusted/,
    );
    expect(
      redisProblem(withCode("Hostname/IP does not match certificate's altnames", 'ERR_TLS_CERT_ALTNAME_INVALID')),
    ).toMatch(/does not name the host in REDIS_URL/);
    expect(redisProblem(withCode('certificate has expired', 'CERT_HAS_EXPIRED'))).toMatch(/not valid now/);
    expect(redisProblem(withCode('connect ECONNREFUSED 10.0.0.5:6379', 'ECONNREFUSED'))).toBe(
      'nothing listens there (connect ECONNREFUSED 10.0.0.5:6379)',
    );
    expect(redisProblem(withCode('read ECONNRESET', 'ECONNRESET'), 'redis://h:6379')).toMatch(
      /one that speaks TLS wants rediss:\/\//,
    );
    expect(redisProblem(withCode('read ECONNRESET', 'ECONNRESET'), 'rediss://h:6380')).toBe(
      'Redis closed the connection (read ECONNRESET)',
    );
    expect(redisProblem(new Error("NOPERM User app has no permissions to run the 'ping' command"))).toMatch(
      /^the user in REDIS_URL may not run what agentq needs .*ACL SETUSER/,
    );
    expect(
      redisProblem(
        withCode('ssl3_read_bytes:tlsv13 alert certificate required', 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED'),
      ),
    ).toMatch(/^Redis wants a client certificate/);
    expect(redisProblem(withCode('getaddrinfo ENOTFOUND redis.internal', 'ENOTFOUND'))).toMatch(
      /^the host of REDIS_URL is not found/,
    );
    expect(redisProblem(withCode('write EPROTO ... wrong version number', 'EPROTO'), 'rediss://h:6379')).toMatch(
      /^TLS failed .*: is that port a TLS port\?/,
    );
    expect(redisProblem('down')).toBe('down');
  });

  it("reads a Cluster's error for its last node's, and a Sentinel's without its changing retry time", () => {
    const slots = Object.assign(new Error('Failed to refresh slots cache.'), {
      lastNodeError: new Error('WRONGPASS invalid username-password pair or user is disabled.'),
    });
    expect(redisProblem(slots)).toMatch(/^Redis refused the user or password/);
    const closed = Object.assign(new Error('Failed to refresh slots cache.'), {
      lastNodeError: new Error('Connection is closed.'),
    });
    expect(redisProblem(closed)).toBe('no node of the Cluster in REDIS_URL answers (Connection is closed.)');
    const sentinel = (ms: number, last = 'Connection is closed.') =>
      new Error(`All sentinels are unreachable. Retrying from scratch after ${ms}ms. Last error: ${last}`);
    expect(redisProblem(sentinel(400))).toBe(redisProblem(sentinel(1600)));
    expect(redisProblem(sentinel(400))).toBe('All sentinels are unreachable. Last error: Connection is closed.');
    expect(redisProblem(sentinel(400, 'self-signed certificate'))).toMatch(
      /^no Sentinel answers: the TLS certificate of Redis is not trusted .*NODE_EXTRA_CA_CERTS/,
    );
    expect(redisProblem(sentinel(400, 'connect ECONNREFUSED 127.0.0.1:26379'))).toBe(
      'no Sentinel answers: nothing listens there (connect ECONNREFUSED 127.0.0.1:26379)',
    );
    expect(redisProblem(sentinel(400, 'WRONGPASS invalid username-password pair or user is disabled.'))).toMatch(
      /^no Sentinel answers: Redis refused the user or password/,
    );
  });
});
