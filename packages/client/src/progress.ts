import type { ActionItem, Run, RunEvent } from './types.js';

export interface Style {
  dim(s: string): string;
  ok(s: string): string;
  bad(s: string): string;
  bold(s: string): string;
}

const plain: Style = { dim: (s) => s, ok: (s) => s, bad: (s) => s, bold: (s) => s };
const ansi = (code: number) => (s: string) => `\x1b[${code}m${s}\x1b[0m`;
const colored: Style = { dim: ansi(2), ok: ansi(32), bad: ansi(31), bold: ansi(1) };

/** ANSI colours when `stream` is a terminal and `color` is not turned off (NO_COLOR). */
export function styleFor(stream: { isTTY?: boolean }, color = true): Style {
  return stream.isTTY && color ? colored : plain;
}

const clip = (s: string, n = 120) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();
const ms = (n: number) => (n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(1)} s`);
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** One line saying how a run ended: status, why, depth (rounds done), steps, tool calls, tokens, time. */
export function summary(run: Run, style: Style = plain): string {
  const color = run.status === 'completed' ? style.ok : style.bad;
  const took = run.completed_at ? ` · ${ms(Date.parse(run.completed_at) - Date.parse(run.created_at))}` : '';
  const u = run.usage_total;
  const parts = [
    `${color(run.status)}${run.stop_reason ? ` (${run.stop_reason})` : ''}`,
    `depth ${run.depth}/${run.max_depth}`,
    plural(u.model_calls, 'step'),
    plural(u.tool_calls, 'tool call'),
    `${u.total_tokens} tokens (${u.prompt_tokens} prompt + ${u.completion_tokens} completion)`,
  ];
  const error = run.error ? `\n${style.bad(`error ${run.error.code}: ${run.error.message}`)}` : '';
  return `${parts.join(' · ')}${took}${error}`;
}

/** One line saying what a request waits for: a yes to a call, a client tool's output, or an answer. */
export function describeAction(item: ActionItem): string {
  switch (item.type) {
    case 'approval':
      return `approve ${item.name} ${clip(item.arguments)}`;
    case 'client_tool':
      return `client tool ${item.name} ${clip(item.arguments)}`;
    default: {
      const choices = item.choices?.length ? ` (${clip(item.choices.join(' | '), 80)})` : '';
      return `question: ${clip(oneLine(item.question ?? ''))}${choices}`;
    }
  }
}

export interface ProgressOptions {
  /** Colours, or none. @defaultValue no colours (see styleFor) */
  style?: Style;
  /** Also show what each tool call returned (its event's `output`), on one line under it. @defaultValue false */
  toolOutputs?: boolean;
}

/**
 * Renders a run's events as progress lines: each step (one model call) with its tokens and
 * time, each tool call of its round with its arguments and duration, each sub-run, each
 * request for an answer and its decision, and the end.
 */
export function progressPrinter(write: (line: string) => void, opts: ProgressOptions = {}) {
  const style = opts.style ?? plain;
  const stepStarted = new Map<number, number>();
  // When the event happened (not when it arrived: events can come in one burst).
  const when = (e: RunEvent) => Date.parse(e.data.at);
  const toolNames = new Map<string, string>();
  return (e: RunEvent) => {
    switch (e.event) {
      case 'run.queued':
        write(style.dim(`${e.data.run_id} queued`));
        break;
      case 'run.started':
        write(style.dim('started'));
        break;
      case 'step.started': {
        stepStarted.set(e.data.depth, when(e));
        const disabled = e.data.tools_disabled ? ' · tools disabled (budget reached)' : '';
        write(`${style.bold(`step ${e.data.depth}`)} ${style.dim(`· ${e.data.model}${disabled}`)}`);
        break;
      }
      case 'step.completed': {
        const started = stepStarted.get(e.data.depth);
        const u = e.data.usage;
        const what = e.data.tool_calls.length ? plural(e.data.tool_calls.length, 'tool call') : 'answer';
        const took = started ? ` · ${ms(when(e) - started)}` : '';
        write(
          `  ${style.dim(`${what} · ${u.total_tokens} tokens (${u.prompt_tokens} + ${u.completion_tokens})${took}`)}`,
        );
        for (const t of e.data.tool_calls) {
          toolNames.set(t.id, t.name);
          write(`  → ${t.name} ${style.dim(clip(t.arguments))}`);
        }
        break;
      }
      case 'tool.started':
        if (e.data.attempt > 1) write(`  ↻ ${e.data.name} ${style.dim(`attempt ${e.data.attempt}`)}`);
        break;
      case 'tool.completed': {
        const mark = e.data.is_error ? style.bad('✗') : style.ok('✓');
        write(`  ${mark} ${e.data.name} ${style.dim(`${ms(e.data.duration_ms)}${e.data.is_error ? ' · error' : ''}`)}`);
        if (opts.toolOutputs) write(`    ${style.dim(clip(oneLine(e.data.output), 160))}`);
        break;
      }
      case 'subrun.started': {
        const by = toolNames.get(e.data.tool_call_id) ?? 'a tool call';
        write(`  ↳ sub-run ${e.data.run_id} ${style.dim(`started by ${by}`)}`);
        break;
      }
      case 'subrun.completed':
        write(`  ↳ sub-run ${e.data.run_id} ${(e.data.status === 'completed' ? style.ok : style.bad)(e.data.status)}`);
        break;
      case 'action.required':
        for (const item of e.data.items) {
          const expires = item.expires_at ? ` · expires ${item.expires_at}` : '';
          write(`  ⏸ ${describeAction(item)} ${style.dim(`· ${item.id}${expires}`)}`);
        }
        break;
      case 'action.resolved': {
        const yes = e.data.decision === 'approved' || e.data.decision === 'answered';
        const shown = yes ? style.ok : style.bad;
        write(`  ${shown(yes ? '✓' : '✗')} ${e.data.id} ${shown(e.data.decision)}`);
        break;
      }
      case 'run.completed':
      case 'run.failed':
      case 'run.cancelled':
      case 'run.incomplete':
        write(summary(e.data.run, style));
        break;
      default:
        break; // message.delta: the answer is printed whole at the end
    }
  };
}
