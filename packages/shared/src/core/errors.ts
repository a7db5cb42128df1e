/** Base of every agentq error; `retryable` tells a worker whether another attempt can help. */
export class AgentqError extends Error {
  override readonly name: string;
  constructor(
    message: string,
    readonly code: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A fault another attempt may fix (a server unreachable, a 429, a dropped connection). */
export class RetryableError extends AgentqError {
  constructor(message: string, code = 'retryable', options?: { cause?: unknown; retryAfterMs?: number }) {
    super(message, code, true, options);
    this.retryAfterMs = options?.retryAfterMs;
  }
  readonly retryAfterMs?: number;
}

/** A fault no retry can fix (a bad request to the provider, invalid structured output). */
export class FatalError extends AgentqError {
  constructor(message: string, code = 'fatal', options?: { cause?: unknown }) {
    super(message, code, false, options);
  }
}

/** Bad configuration at start: the message is one line per bad variable, fit to print. */
export class ConfigError extends AgentqError {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'), 'config_invalid', false);
  }
}

/** A request that cannot be carried out as given: `details` name each bad field (the API answers 400). */
export class InvalidRequestError extends AgentqError {
  constructor(
    message: string,
    readonly details: Array<{ field: string; message: string }>,
  ) {
    super(message, 'validation_error', false);
  }
}

/** Over one of a tenant's limits: the request may succeed after `retryAfterMs` (the API answers 429). */
export class RateLimitedError extends AgentqError {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message, 'rate_limited', true);
  }
}

/** Too few replicas confirmed a write in time (REDIS_WAIT_REPLICAS): the API answers 503. */
export class ReplicationError extends AgentqError {
  constructor(message: string) {
    super(message, 'replication_timeout', true);
  }
}
