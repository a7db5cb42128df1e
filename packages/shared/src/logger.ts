import { pino, type Logger } from 'pino';

export type { Logger };

/** Paths redacted from every log line: keys and secrets never reach the logs. */
export const REDACT_PATHS = [
  'apiKey',
  'api_key',
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'secret',
  'webhook.secret',
  '*.apiKey',
  '*.secret',
  'openaiApiKey',
  'webhookSecret',
];

/** Builds the pino logger of a service: JSON lines, `service` on each. */
export function createLogger(opts: { service: string; level?: string; destination?: pino.DestinationStream }): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      base: { service: opts.service },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    opts.destination,
  );
}
