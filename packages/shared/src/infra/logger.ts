import { isSpanContextValid, trace } from '@opentelemetry/api';
import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Paths redacted from every log line: API keys, webhook secrets, provider keys and
 * credentials never reach the logs, whether logged alone, in a config or in a run spec.
 */
export const REDACT_PATHS = [
  'apiKey',
  'api_key',
  'apiKeys',
  'authorization',
  'headers.authorization',
  'headers.Authorization',
  'req.headers.authorization',
  'secret',
  'webhook.secret',
  'spec.webhook.secret',
  '*.apiKey',
  '*.api_key',
  '*.apiKeys',
  '*.secret',
  '*.headers.authorization',
  '*.headers.Authorization',
  '*.webhook.secret',
  'openaiApiKey',
  'webhookSecret',
  'OPENAI_API_KEY',
  'API_KEYS',
  'WEBHOOK_SECRET',
  '*.OPENAI_API_KEY',
  '*.API_KEYS',
  '*.WEBHOOK_SECRET',
  'password',
  '*.password',
  'token',
  '*.token',
  // The `env` of an MCP stdio server holds its credentials.
  'env',
  '*.env',
];

// The trace of the span active when a line is logged, so a line can be found from its trace and back.
function traceFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return isSpanContextValid(span.spanContext()) ? { trace_id: traceId, span_id: spanId } : {};
}

/**
 * Builds the pino logger of a service: JSON lines with `service` on each (and `trace_id` /
 * `span_id` inside a traced span); human-readable through pino-pretty only when stdout is a
 * terminal and no destination is given.
 */
export function createLogger(opts: {
  service: string;
  level?: string;
  destination?: pino.DestinationStream;
  pretty?: boolean;
}): Logger {
  const pretty = opts.destination === undefined && (opts.pretty ?? process.stdout.isTTY === true);
  return pino(
    {
      level: opts.level ?? 'info',
      base: { service: opts.service },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin: traceFields,
      ...(pretty
        ? {
            transport: {
              target: 'pino-pretty',
              options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
            },
          }
        : {}),
    },
    opts.destination,
  );
}

/** The logging methods a job processor uses. */
export type JobLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

/**
 * A child logger made on first use, and only for enabled levels: a pino child sets up
 * redaction when it is made, which is measurable when every job makes one and most log nothing.
 */
export function lazyChild(logger: Logger, bindings: Record<string, unknown>): JobLogger {
  let child: Logger | undefined;
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (...args: unknown[]) => {
      if (!logger.isLevelEnabled(level)) return;
      child ??= logger.child(bindings);
      (child[level] as (...a: unknown[]) => void)(...args);
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as JobLogger;
}
