/**
 * Delay before retrying a model step: the provider's Retry-After when the error carries one
 * (a 503 that says when to come back), else exponential from `baseMs` with ±50 % jitter.
 * Capped at 10 minutes.
 */
export function providerBackoff(attemptsMade: number, err: unknown, baseMs = 1000, random = Math.random): number {
  const retryAfter = (err as { retryAfterMs?: number } | undefined)?.retryAfterMs;
  if (typeof retryAfter === 'number' && Number.isFinite(retryAfter) && retryAfter >= 0)
    return Math.min(Math.max(retryAfter, 100), 600_000);
  const exp = baseMs * 2 ** Math.max(0, attemptsMade - 1);
  return Math.min(Math.round(exp * (0.5 + random())), 600_000);
}

/** Delay before retrying a webhook delivery: exponential from `baseMs` with ±20 % jitter. */
export function webhookBackoff(attemptsMade: number, baseMs: number, random = Math.random): number {
  const exp = baseMs * 2 ** Math.max(0, attemptsMade - 1);
  return Math.round(exp * (0.8 + 0.4 * random()));
}
