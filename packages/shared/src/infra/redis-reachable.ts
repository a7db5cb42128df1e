import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createRedis, isCluster } from './redis.js';
import { parseRedisUrl, type RedisTarget } from './redis-url.js';

/** TLS verification failures, by Node's error code: the server's certificate is not trusted. */
const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
]);

/** The underlying error of a Cluster's "failed to refresh the slots" or of a wrapped error. */
function rootCause(err: Error): Error {
  const inner = (err as { lastNodeError?: unknown }).lastNodeError;
  return inner instanceof Error ? rootCause(inner) : err;
}

/**
 * Why a connection to Redis fails, in words an operator can act on: wrong credentials, a TLS
 * certificate not trusted, nothing listening. Never the password (Redis's and Node's messages do
 * not carry it; the command that failed, which does, is not read). `url` (REDIS_URL) tells
 * whether a hint about TLS applies.
 */
export function redisProblem(error: unknown, url = ''): string {
  if (!(error instanceof Error)) return String(error);
  const err = rootCause(error);
  const code = (err as { code?: string }).code ?? '';
  // Sentinel's says when it retries, which changes each time.
  const message = err.message.replace(/ Retrying from scratch after \d+ms\./, '');
  const tlsUrl = /^rediss/.test(url);
  // Sentinel's names its last error only as text: read that text as the error.
  const sentinels = /^All sentinels are unreachable\. Last error: (.+)$/.exec(message);
  if (sentinels && sentinels[1] !== 'Connection is closed.')
    return `no Sentinel answers: ${redisProblem(textError(sentinels[1]!), url)}`;
  if (/^WRONGPASS/.test(message)) return `Redis refused the user or password in REDIS_URL (${message})`;
  if (/^NOAUTH/.test(message)) return `Redis wants a password and REDIS_URL gives none (${message})`;
  if (/^NOPERM/.test(message))
    return `the user in REDIS_URL may not run what agentq needs (${message}); grant it with ACL SETUSER`;
  if (UNTRUSTED.has(code))
    return (
      `the TLS certificate of Redis is not trusted (${message}); ` +
      `for a private CA, set NODE_EXTRA_CA_CERTS to its PEM file`
    );
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID')
    return `the TLS certificate of Redis is not valid now (${message})`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return `the TLS certificate of Redis does not name the host in REDIS_URL (${message})`;
  if (/certificate required/.test(message))
    return (
      `Redis wants a client certificate, which agentq does not send (${message}); ` +
      `set tls-auth-clients to no or optional`
    );
  if (code === 'EPROTO' || /wrong version number|packet length too long/.test(message)) {
    return `TLS failed (${message})${tlsUrl ? ': is that port a TLS port? rediss:// speaks TLS' : ''}`;
  }
  if (code === 'ECONNREFUSED') return `nothing listens there (${message})`;
  if (code === 'ECONNRESET')
    return `Redis closed the connection (${message})${tlsUrl ? '' : '; one that speaks TLS wants rediss://'}`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `the host of REDIS_URL is not found (${message})`;
  // A Cluster's nodes report no more than that (ioredis keeps the socket's error from it).
  if (err !== error && message === 'Connection is closed.')
    return `no node of the Cluster in REDIS_URL answers (${message})`;
  return message;
}

/**
 * Why the first Sentinel of `target` that fails to answer fails, asked of it directly: ioredis
 * keeps a Sentinel's connection errors (a certificate not trusted, say) to itself and reports
 * "Connection is closed.". Undefined when one answers (the trouble is then the master).
 */
async function sentinelError(target: Extract<RedisTarget, { kind: 'sentinel' }>): Promise<Error | undefined> {
  let first: Error | undefined;
  for (const { host, port } of target.sentinels) {
    const c = new Redis({
      host,
      port,
      password: target.sentinelPassword,
      tls: target.tls ? {} : undefined,
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      connectTimeout: 1000,
    });
    let error: Error | undefined;
    c.on('error', (err: Error) => (error ??= err));
    try {
      await c.connect();
      await c.ping();
      return undefined;
    } catch (err) {
      first ??= error ?? (err as Error);
    } finally {
      c.disconnect();
    }
  }
  return first;
}

/** An error for a message seen only as text, with the code its words give (Sentinel's last error). */
function textError(message: string): Error {
  const codes: Array<[RegExp, string]> = [
    [/self[- ]signed certificate in certificate chain/, 'SELF_SIGNED_CERT_IN_CHAIN'],
    [/self[- ]signed certificate/, 'DEPTH_ZERO_SELF_SIGNED_CERT'],
    [/unable to verify the first certificate/, 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'],
    [/does not match certificate's altnames/, 'ERR_TLS_CERT_ALTNAME_INVALID'],
    [/ECONNREFUSED/, 'ECONNREFUSED'],
    [/ECONNRESET/, 'ECONNRESET'],
    [/ENOTFOUND/, 'ENOTFOUND'],
  ];
  return Object.assign(new Error(message), { code: codes.find(([re]) => re.test(message))?.[1] });
}

/**
 * Resolves once the Redis of `url` answers a PING (as the user REDIS_URL names, over TLS if it
 * says so), or `signal` aborts. Until then it tries again every `retryMs` and logs why not
 * (`<waiting>: <reason>`), once for each reason, then once when Redis answers. A worker waits
 * for it before it starts, as its connections would otherwise retry without a word (or, refused
 * their credentials, end the process with a stack trace); the API, which answers 503 meanwhile,
 * only logs.
 */
export async function untilRedisAnswers(
  url: string,
  logger: Logger,
  opts: { waiting?: string; retryMs?: number; pingTimeoutMs?: number; signal?: AbortSignal } = {},
): Promise<void> {
  // A PING waits for the connection (within its timeout), whose own error says why it fails.
  const target = parseRedisUrl(url);
  const client = createRedis(url, { name: 'agentq-startup-check', blocking: true });
  let connectionError: Error | undefined;
  /** Wakes a wait for the PING at the connection's next error: the reason is known then. */
  let onError: (() => void) | undefined;
  const closed = (err: Error) => rootCause(err).message === 'Connection is closed.';
  const seen = (err: Error) => {
    // "Connection is closed" follows the error that closed it, if there was one: keep that.
    if (!connectionError || closed(connectionError) || !closed(err)) connectionError = err;
    onError?.();
  };
  client.on('error', seen);
  client.on('node error', seen);
  // Connected again: an earlier error no longer says why (Redis may be loading, or refuse a command).
  client.on('connect', () => (connectionError = undefined));
  // A Cluster's nodes keep their connection errors (nothing listens there, say) to themselves.
  if (isCluster(client)) client.on('+node', (node: Redis) => node.on('error', seen));
  const told = new Set<string>();
  // Ends a wait (for the PING, between tries) at once when `signal` aborts.
  const stopped = new Promise<void>((resolve) =>
    opts.signal?.addEventListener('abort', () => resolve(), { once: true }),
  );
  // One PING at a time: it waits in the client's queue until the connection is up.
  let ping: Promise<unknown> | undefined;
  try {
    while (!opts.signal?.aborted) {
      if (!ping) {
        const p = client.ping();
        ping = p;
        p.catch(() => {}).finally(() => {
          if (ping === p) ping = undefined;
        });
      }
      const errored = new Promise<never>((_, reject) => (onError = () => reject(new Error('connection error'))));
      errored.catch(() => {});
      try {
        const answered = await withTimeout(
          Promise.race([ping.then(() => true), errored, stopped.then(() => false)]),
          opts.pingTimeoutMs ?? 2000,
        );
        if (answered && told.size) logger.info('Redis answers now');
        return;
      } catch (err) {
        // Redis's own answer to the PING (LOADING, NOPERM…) says more than an earlier error.
        const replied = err instanceof Error && err.name === 'ReplyError';
        const cause = replied ? err : (connectionError ?? err);
        let reason = redisProblem(cause, url);
        // Sentinels that could not be reached are all ioredis says "Connection is closed." of.
        const sentinelsClosed =
          target.kind === 'sentinel' &&
          cause instanceof Error &&
          /^All sentinels are unreachable\..*Last error: Connection is closed\.$/.test(cause.message);
        if (sentinelsClosed) {
          const direct = await sentinelError(target);
          if (direct) reason = `no Sentinel answers: ${redisProblem(direct, url)}`;
        }
        if (!replied && !connectionError && /^rediss/.test(url))
          reason += ' (rediss:// speaks TLS: is that port a TLS port?)';
        if (!told.has(reason)) logger.warn({ reason }, `${opts.waiting ?? 'waiting for Redis'}: ${reason}`);
        told.add(reason);
      } finally {
        onError = undefined;
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([new Promise((r) => (timer = setTimeout(r, opts.retryMs ?? 500))), stopped]);
      clearTimeout(timer);
    }
  } finally {
    client.disconnect();
  }
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`Redis does not answer within ${ms} ms`)), ms)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
