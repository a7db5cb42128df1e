import type { parseArgs } from 'node:util';
import type { Prompter } from './action-prompt.js';
import { isTerminalStatus, type Run, type RunStatus } from './types.js';

// What the CLI's command groups share: exit codes, the streams they write to, the options
// they parse and small helpers.

export const EXIT = {
  completed: 0,
  failed: 1,
  incomplete: 2,
  cancelled: 3,
  apiError: 4,
  alreadyDecided: 5,
  usage: 64,
  interrupted: 130,
} as const;

export const exitFor = (status: RunStatus): number => (isTerminalStatus(status) ? EXIT[status] : EXIT.apiError);

export interface Io {
  stdout: { write(s: string): unknown; isTTY?: boolean };
  stderr: { write(s: string): unknown; isTTY?: boolean };
  /** Registers a Ctrl-C handler; returns its removal. */
  onInterrupt?: (handler: () => void) => () => void;
  readStdin?: () => string;
  /** A prompter on the terminal to ask for answers in, or null when there is none (stdin or stderr not a TTY). */
  openPrompter?: () => Prompter | null;
}

/** A bad command line: exit 64 with the message. */
export class UsageError extends Error {}

export const OPTIONS = {
  follow: { type: 'boolean', short: 'f' },
  outputs: { type: 'boolean' },
  json: { type: 'boolean' },
  agent: { type: 'string', short: 'a' },
  model: { type: 'string', short: 'm' },
  tools: { type: 'string', short: 't' },
  'max-depth': { type: 'string', short: 'd' },
  instructions: { type: 'string', short: 'i' },
  'max-total-tokens': { type: 'string' },
  'timeout-ms': { type: 'string' },
  'on-budget-exhausted': { type: 'string' },
  subagents: { type: 'boolean' },
  metadata: { type: 'string' },
  'idempotency-key': { type: 'string' },
  'approve-tools': { type: 'string' },
  'approve-destructive': { type: 'boolean' },
  'approval-timeout-ms': { type: 'string' },
  'on-approval-timeout': { type: 'string' },
  'human-input': { type: 'boolean' },
  'client-tools': { type: 'string' },
  arguments: { type: 'string' },
  reason: { type: 'string' },
  run: { type: 'string' },
  detach: { type: 'boolean' },
  status: { type: 'string' },
  limit: { type: 'string' },
  after: { type: 'string' },
  all: { type: 'boolean' },
  url: { type: 'string' },
  'api-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

export const int = (v: string | undefined, name: string): number | undefined => {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number (got "${v}")`);
  return Number(v);
};

export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

export const answerOf = (run: Run) =>
  typeof run.output?.content === 'string' ? run.output.content : run.output ? JSON.stringify(run.output.content) : '';
