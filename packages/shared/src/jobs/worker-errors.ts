import type { Logger } from 'pino';
import { redisProblem } from '../infra/redis-reachable.js';

/** Distinct errors remembered at once (the oldest is forgotten past it). */
const REMEMBERED = 100;

/**
 * A BullMQ worker's error log that says each error at most once every `everyMs`, with how many
 * times it came meanwhile: while Redis is down or refuses the password, each connection of a
 * worker fails again at every reconnect (one to three lines a second a process before), and the
 * first line already says why (see redisProblem).
 */
export function workerErrorLog(
  logger: Logger,
  label: string,
  opts: { everyMs?: number; now?: () => number } = {},
): (err: Error) => void {
  const everyMs = opts.everyMs ?? 30_000;
  const now = opts.now ?? Date.now;
  const said = new Map<string, { at: number; since: number }>();
  return (err) => {
    const reason = redisProblem(err);
    const t = now();
    const last = said.get(reason);
    if (last && t - last.at < everyMs) {
      last.since++;
      return;
    }
    logger.error({ err: reason, ...(last?.since ? { repeated: last.since } : {}) }, `${label} worker error`);
    said.delete(reason);
    said.set(reason, { at: t, since: 0 });
    if (said.size > REMEMBERED) said.delete(said.keys().next().value!);
  };
}
