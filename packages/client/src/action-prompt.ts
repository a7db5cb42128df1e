import { createInterface } from 'node:readline';
import type { Style } from './progress.js';
import { MAX_REASON_CHARS, MAX_RESPONSE_CHARS, type ActionItem, type ActionResponse } from './types.js';

// Asking a person, in a terminal, for the answer to a request: approve / reject / edit a call,
// give a client tool's output, answer a question. The streams are passed in, so the asking is
// tested with plain in-memory streams.

/** Asks for one line at a time. */
export interface Prompter {
  /** Shows `question` and resolves with the next line, or null once the input has ended (or Ctrl-C ended it). */
  ask(question: string): Promise<string | null>;
  /** True once Ctrl-C ended the input. */
  readonly interrupted: boolean;
  close(): void;
}

export interface LinePrompterOptions {
  /** A terminal: line editing and echo, and Ctrl-C arrives as a key. @defaultValue false */
  terminal?: boolean;
  /** Called on Ctrl-C while asking: in terminal mode readline takes the key, so no SIGINT reaches the process. */
  onInterrupt?: () => void;
}

// Lines typed ahead wait for their question; past this many, reading pauses until one is asked.
const TYPE_AHEAD = 16;

/** A Prompter on a readable (stdin) that writes its questions to `output` (stderr). */
export function linePrompter(
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
  o: LinePrompterOptions = {},
): Prompter {
  const rl = createInterface({ input, output, terminal: o.terminal ?? false });
  const typed: string[] = [];
  let waiting: ((line: string | null) => void) | undefined;
  let ended = false;
  let interrupted = false;
  const settle = (line: string | null) => {
    const w = waiting;
    waiting = undefined;
    w?.(line);
  };
  rl.on('line', (line) => {
    if (waiting) {
      // A terminal echoes what is typed; other input is echoed here, so the transcript reads the same.
      if (!o.terminal) output.write(`${line}\n`);
      return settle(line);
    }
    typed.push(line);
    if (typed.length >= TYPE_AHEAD) rl.pause();
  });
  rl.on('close', () => {
    ended = true;
    settle(null);
  });
  rl.on('SIGINT', () => {
    interrupted = true;
    output.write('\n'); // off the line of the question, which stays unanswered
    rl.close();
    o.onInterrupt?.();
  });
  return {
    get interrupted() {
      return interrupted;
    },
    ask(question) {
      if (typed.length) {
        output.write(`${question}${typed[0]}\n`);
        return Promise.resolve(typed.shift()!);
      }
      if (ended) return Promise.resolve(null);
      return new Promise((resolve) => {
        waiting = resolve;
        rl.setPrompt(question);
        rl.prompt(); // also resumes reading
      });
    },
    close: () => rl.close(),
  };
}

/** What asking about one request came to: the response to send, `skip` (answer it later) or `ended` (no more input). */
export type Asked = ActionResponse | 'skip' | 'ended';

const MAX_SHOWN_LINES = 40;

/** A call's arguments as indented JSON (as they came, when they are not JSON), cut after 40 lines. */
function showArguments(args: string, show: (line: string) => void, style: Style) {
  let text = args;
  try {
    text = JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    // shown as they came: the model wrote them
  }
  const lines = text.split('\n');
  for (const l of lines.slice(0, MAX_SHOWN_LINES)) show(`    ${l}`);
  if (lines.length > MAX_SHOWN_LINES) show(style.dim(`    … ${lines.length - MAX_SHOWN_LINES} more lines`));
}

/** Why `text` cannot be a call's edited arguments, or null when it can. */
export function argumentsProblem(text: string): string | null {
  if (text.length > MAX_RESPONSE_CHARS) return `at most ${MAX_RESPONSE_CHARS} characters`;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `not JSON (${(err as Error).message})`;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? null
    : 'must be a JSON object, such as {"id": 42}';
}

/**
 * Shows a request and asks what to answer: for an approval, approve / reject (with a reason) /
 * edit (new JSON arguments); for a client tool, its output; for a question, a number that picks
 * a choice or free text. An empty line (or `s` for an approval) leaves the request for later.
 */
export async function askForResponse(
  item: ActionItem,
  prompter: Prompter,
  show: (line: string) => void,
  style: Style,
): Promise<Asked> {
  const where = style.dim(`(${item.id})`);
  const ask = async (question: string, field: string, max: number): Promise<string | null> => {
    for (;;) {
      const line = await prompter.ask(question);
      if (line === null || line.length <= max) return line;
      show(style.bad(`  ${field}: at most ${max} characters (got ${line.length})`));
    }
  };
  switch (item.type) {
    case 'approval': {
      show(`${style.bold('?')} approve a call of ${style.bold(item.name)} ${where}`);
      showArguments(item.arguments, show, style);
      for (;;) {
        const choice = await prompter.ask('  [a]pprove, [r]eject, [e]dit the arguments, or [s]kip (answer later)? ');
        if (choice === null) return 'ended';
        switch (choice.trim().toLowerCase()) {
          case 'a':
          case 'approve':
          case 'y':
          case 'yes':
            return { id: item.id, approve: true };
          case 'r':
          case 'reject':
          case 'n':
          case 'no': {
            const reason = await ask('  reason (the model reads it; Enter for none): ', 'reason', MAX_REASON_CHARS);
            if (reason === null) return 'ended';
            return reason.trim()
              ? { id: item.id, approve: false, reason: reason.trim() }
              : { id: item.id, approve: false };
          }
          case 'e':
          case 'edit': {
            const edited = await editArguments(item, prompter, show, style);
            if (edited !== 'back') return edited;
            break;
          }
          case 's':
          case 'skip':
          case '':
            return 'skip';
          default:
            show(style.bad('  answer a (approve), r (reject), e (edit the arguments) or s (skip)'));
        }
      }
    }
    case 'client_tool': {
      show(`${style.bold('?')} the client tool ${style.bold(item.name)} was called ${where}`);
      showArguments(item.arguments, show, style);
      const output = await ask('  its output (one line; Enter to answer later): ', 'output', MAX_RESPONSE_CHARS);
      if (output === null) return 'ended';
      return output ? { id: item.id, output } : 'skip';
    }
    case 'input': {
      show(`${style.bold('?')} ${item.question ?? ''} ${where}`);
      const choices = item.choices ?? [];
      for (const [i, c] of choices.entries()) show(`  ${i + 1}) ${c}`);
      for (;;) {
        const hint = choices.length ? 'a number picks a choice; ' : '';
        const answer = await ask(`  answer (${hint}Enter to answer later): `, 'answer', MAX_RESPONSE_CHARS);
        if (answer === null) return 'ended';
        if (!answer.trim()) return 'skip';
        if (choices.length && /^\d+$/.test(answer.trim())) {
          const picked = choices[Number(answer.trim()) - 1];
          if (picked !== undefined) return { id: item.id, answer: picked };
          show(style.bad(`  pick 1 to ${choices.length}, or type the answer in words`));
          continue;
        }
        return { id: item.id, answer };
      }
    }
  }
}

/** Reads new arguments for an approval until they are a JSON object; `back` on an empty line. */
async function editArguments(
  item: ActionItem,
  prompter: Prompter,
  show: (line: string) => void,
  style: Style,
): Promise<Asked | 'back'> {
  for (;;) {
    const text = await prompter.ask('  new arguments, one line of JSON (Enter to go back): ');
    if (text === null) return 'ended';
    if (!text.trim()) return 'back';
    const problem = argumentsProblem(text.trim());
    if (!problem) return { id: item.id, approve: true, arguments: text.trim() };
    show(style.bad(`  arguments: ${problem}`));
  }
}
