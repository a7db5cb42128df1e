import { askForResponse, type Prompter } from './action-prompt.js';
import type { AgentqClient } from './client.js';
import { ActionResolvedError, AgentqApiError } from './errors.js';
import { describeAction, type Style } from './progress.js';
import type { ActionItem, ActionResponse } from './types.js';

/** The `agentq actions` commands that answer `item` from another shell. */
export function howToAnswer(item: ActionItem): string {
  switch (item.type) {
    case 'approval':
      return (
        `agentq actions approve ${item.id} [--arguments '<json>']` +
        `  or  agentq actions reject ${item.id} [--reason '<why>']`
      );
    case 'client_tool':
      return `agentq actions answer ${item.id} '<the output>'`;
    default:
      return `agentq actions answer ${item.id} '<the answer>'`;
  }
}

const sent = (r: ActionResponse): string => {
  if ('approve' in r)
    return r.approve ? ('arguments' in r ? 'approved with the edited arguments' : 'approved') : 'rejected';
  return 'output' in r ? 'output sent' : 'answer sent';
};

export interface WaitingRunOptions {
  /** Opens a prompter on the terminal, or gives null when there is none to ask in (then hints are printed). */
  openPrompter?: () => Prompter | null;
  /** Writes a line for people (stderr). */
  write: (line: string) => void;
  style: Style;
  /** Describe each request in its hint (when no progress line has described it already). */
  describe: boolean;
}

/**
 * What `agentq run` does each time the run waits: asks in the terminal for each request not
 * seen before and sends each answer as it is given (a refused edit is asked again; a request
 * decided meanwhile is reported), or, with no terminal, prints how to answer from elsewhere.
 * Answers go to `runId` (the root), which takes its sub-runs' requests too.
 */
export function waitingRunHandler(
  client: AgentqClient,
  runId: string,
  o: WaitingRunOptions,
): (items: ActionItem[]) => Promise<void> {
  const seen = new Set<string>();
  let inputEnded = false;
  const { write, style } = o;

  const hint = (items: ActionItem[], why: string) => {
    write(style.dim(`  ${why}; answer from another shell:`));
    for (const item of items) {
      if (o.describe) write(`  ⏸ ${describeAction(item)} ${style.dim(`· ${item.id}`)}`);
      write(`    ${howToAnswer(item)}`);
    }
  };

  /** Asks until the request is settled (answered here, or found decided), left for later, or the input ends. */
  async function answer(item: ActionItem, prompter: Prompter): Promise<'settled' | 'skip' | 'ended'> {
    for (;;) {
      const response = await askForResponse(item, prompter, write, style);
      if (response === 'skip' || response === 'ended') return response;
      try {
        await client.respond(runId, [response]);
        write(style.ok(`  ${item.id} ${sent(response)}`));
        return 'settled';
      } catch (err) {
        if (err instanceof ActionResolvedError) {
          const d = err.resolved.find((r) => r.id === item.id);
          write(
            style.bad(`  ${item.id} was decided already: ${d?.decision ?? 'unknown'}${d?.at ? ` at ${d.at}` : ''}`),
          );
          return 'settled';
        }
        // A 400 is about this answer (an edit that does not fit the tool's schema): ask again.
        if (err instanceof AgentqApiError && err.status === 400) {
          write(style.bad(`  refused: ${err.message}`));
          continue;
        }
        write(style.bad(`  could not send the answer: ${(err as Error).message}`));
        return 'skip';
      }
    }
  }

  return async (items) => {
    const fresh = items.filter((i) => !seen.has(i.id));
    if (!fresh.length) return;
    for (const i of fresh) seen.add(i.id);
    const prompter = inputEnded ? null : (o.openPrompter?.() ?? null);
    if (!prompter) return hint(fresh, inputEnded ? 'no more input' : 'waiting for an answer (no terminal to ask in)');
    try {
      for (const [n, item] of fresh.entries()) {
        const outcome = await answer(item, prompter);
        if (outcome === 'skip') hint([item], 'left for later');
        if (outcome === 'ended') {
          inputEnded = true;
          // Ctrl-C ended it: the run is being cancelled, so there is nothing to answer.
          if (!prompter.interrupted) hint(fresh.slice(n), 'no more input');
          return;
        }
      }
    } finally {
      prompter.close();
    }
  };
}
