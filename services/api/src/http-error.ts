import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { InvalidRequestError, RateLimitedError, ReplicationError } from '@agentq/shared/core';
import { type Logger } from '@agentq/shared/infra';

/** An error with the status and code the client gets, in the contract's error shape. */
export class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** Response headers it needs (Retry-After of a 429). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export function errorBody(code: string, message: string, details?: unknown) {
  return { error: { code, message, ...(details === undefined ? {} : { details }) } };
}

// ioredis raises these when Redis is down and the command could not be sent or answered.
const REDIS_UNAVAILABLE = [
  'enableOfflineQueue',
  'Connection is closed',
  'ECONNREFUSED',
  'MaxRetriesPerRequest',
  "Stream isn't writeable",
  'ETIMEDOUT',
  'connect ENETUNREACH',
].map((s) => s.toLowerCase());

function isRedisUnavailable(err: Error): boolean {
  const message = err.message.toLowerCase();
  return REDIS_UNAVAILABLE.some((s) => message.includes(s));
}

// Redis refuses writes past maxmemory; inside a transaction the refusal comes as EXECABORT.
function isRedisOutOfMemory(err: Error): boolean {
  const oom = (e: Error) => /^OOM command not allowed/.test(e.message);
  return oom(err) || ((err as { previousErrors?: Error[] }).previousErrors ?? []).some(oom);
}

/** The one error handler: renders every error in the contract's shape, never a stack trace. */
export function onError(logger: Logger) {
  return (err: Error, c: Context) => {
    // A 413 leaves the rest of the body unread: close the connection so a client does not
    // reuse a socket the server is about to drop.
    if (err instanceof HttpError)
      return c.json(errorBody(err.code, err.message, err.details), err.status, {
        ...err.headers,
        ...(err.status === 413 ? { connection: 'close' } : {}),
      });
    if (err instanceof InvalidRequestError) return c.json(errorBody(err.code, err.message, err.details), 400);
    if (err instanceof ReplicationError) return c.json(errorBody(err.code, err.message), 503, { 'retry-after': '1' });
    if (err instanceof RateLimitedError)
      return c.json(errorBody(err.code, err.message), 429, {
        'retry-after': String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))),
      });
    if (isRedisOutOfMemory(err)) {
      logger.error({ err: err.message }, 'redis is out of memory');
      return c.json(errorBody('service_unavailable', 'the run store (Redis) is out of memory; retry later'), 503, {
        'retry-after': '5',
      });
    }
    if (isRedisUnavailable(err)) {
      logger.warn({ err: err.message }, 'redis unavailable');
      return c.json(errorBody('service_unavailable', 'the run store (Redis) is unreachable; retry shortly'), 503, {
        'retry-after': '1',
      });
    }
    logger.error({ err }, 'unhandled error');
    return c.json(errorBody('internal_error', 'an internal error occurred; it has been logged'), 500);
  };
}
