import type { Logger } from 'pino';

/**
 * On SIGTERM or SIGINT: run every closer in order (each is attempted even if one fails), then
 * exit. Workers stop taking jobs and finish or hand back what they hold; past `graceMs` the
 * process exits anyway and BullMQ's stall check hands unfinished jobs to another worker.
 */
export function onShutdown(logger: Logger, closers: Array<() => Promise<unknown>>, graceMs = 25_000): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ grace_ms: graceMs }, 'shutdown took too long: exiting');
      process.exit(1);
    }, graceMs);
    timer.unref();
    let failed = false;
    for (const close of closers) {
      try {
        await close();
      } catch (err) {
        failed = true;
        logger.error({ err: (err as Error).message }, 'error during shutdown');
      }
    }
    logger.info('stopped');
    process.exit(failed ? 1 : 0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}
