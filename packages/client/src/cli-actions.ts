import { readFileSync } from 'node:fs';
import { argumentsProblem } from './action-prompt.js';
import type { AgentqClient } from './client.js';
import { int, table, UsageError, type Io, type Values } from './cli-common.js';
import { describeAction, type Style } from './progress.js';
import { MAX_REASON_CHARS, MAX_RESPONSE_CHARS, type ActionResponse, type InboxItem, type Run } from './types.js';

/** `act_<run id without "run_">_<depth>_<index>`: the run id is part of the request id. */
const ACTION_ID = /^act_([0-9a-z]{21})_\d{1,3}_\d{1,3}$/;

/**
 * The run to answer `actionId` on: `--run` when given, else the run that made the request (a
 * sub-run's request can be answered there as well as on its root).
 */
function runFor(actionId: string, v: Values): string {
  if (v.run) return v.run;
  const m = ACTION_ID.exec(actionId);
  if (!m)
    throw new UsageError(
      `"${actionId.slice(0, 80)}" is not a request id (act_<run>_<depth>_<index>); give the run with --run <run-id>`,
    );
  return `run_${m[1]}`;
}

/** `agentq actions ls|approve|reject|answer`. */
export async function cmdActions(
  client: AgentqClient,
  [sub, id, ...rest]: string[],
  v: Values,
  io: Io,
  style: Style,
): Promise<number> {
  const out = (s: string) => io.stdout.write(`${s}\n`);
  const needId = (usage: string) => {
    if (!id || rest.length)
      throw new UsageError(`agentq actions ${sub} takes one request id: agentq actions ${sub} ${usage}`);
    return id;
  };
  const answered = (actionId: string, what: string, run: Run) => {
    out(v.json ? JSON.stringify(run, null, 2) : `${actionId} ${what} · ${run.id} is ${run.status}`);
    return 0;
  };
  switch (sub) {
    case 'ls':
    case 'list': {
      if (id) throw new UsageError('agentq actions ls takes no arguments (filter with --status pending|resolved)');
      const status = v.status;
      if (status !== undefined && status !== 'pending' && status !== 'resolved')
        throw new UsageError(`--status of actions ls is pending or resolved (got "${status}")`);
      const limit = int(v.limit, 'limit');
      let items: InboxItem[];
      let next: string | null = null;
      if (v.all) {
        items = [];
        for await (const i of client.listAllActions({ status, limit })) items.push(i);
      } else ({ data: items, next } = await client.listActions({ status, limit, after: v.after }));
      if (v.json) {
        out(JSON.stringify({ data: items, next }, null, 2));
        return 0;
      }
      const rows = items.map((i) => [
        i.id,
        i.type,
        i.status === 'pending' ? 'pending' : (i.decision ?? 'resolved'),
        i.created_at,
        describeAction(i),
      ]);
      out(
        rows.length
          ? table([['ID', 'TYPE', 'STATUS', 'CREATED', 'WHAT'], ...rows])
          : style.dim(status === 'pending' ? 'nothing waits for an answer' : 'no requests'),
      );
      if (next) out(style.dim(`more: agentq actions ls${status ? ` --status ${status}` : ''} --after ${next}`));
      return 0;
    }
    case 'approve': {
      const actionId = needId("<action-id> [--arguments '<json>'] [--run <run-id>]");
      if (v.arguments !== undefined) {
        const problem = argumentsProblem(v.arguments);
        if (problem) throw new UsageError(`--arguments: ${problem}`);
      }
      const run = await client.approve(
        runFor(actionId, v),
        actionId,
        v.arguments === undefined ? {} : { arguments: v.arguments },
      );
      return answered(actionId, v.arguments === undefined ? 'approved' : 'approved with the edited arguments', run);
    }
    case 'reject': {
      const actionId = needId("<action-id> [--reason '<why>'] [--run <run-id>]");
      if (v.reason !== undefined && v.reason.length > MAX_REASON_CHARS)
        throw new UsageError(`--reason: at most ${MAX_REASON_CHARS} characters (got ${v.reason.length})`);
      return answered(actionId, 'rejected', await client.reject(runFor(actionId, v), actionId, v.reason));
    }
    case 'answer': {
      if (!id || !rest.length)
        throw new UsageError(
          'agentq actions answer takes a request id and the answer: ' +
            'agentq actions answer <action-id> <text…> ("-" reads stdin)',
        );
      let text = rest.join(' ');
      // Only the final newline of piped text goes: a tool's output keeps its own spacing.
      if (text === '-') text = (io.readStdin ?? (() => readFileSync(0, 'utf8')))().replace(/\r?\n$/, '');
      if (!text) throw new UsageError('agentq actions answer: the answer is empty');
      if (text.length > MAX_RESPONSE_CHARS)
        throw new UsageError(`agentq actions answer: the answer is over ${MAX_RESPONSE_CHARS} characters`);
      const runId = runFor(id, v);
      // A client tool takes `output`, a question `answer`: the pending request says which.
      const item = (await client.getRun(runId)).required_action?.items.find((i) => i.id === id);
      if (item?.type === 'approval')
        throw new UsageError(`${id} asks to approve a call of ${item.name}: use agentq actions approve or reject`);
      // A request that no longer waits is sent as an answer all the same: the API then says how
      // it was decided (409) or that it does not know it (404).
      const response: ActionResponse = item?.type === 'client_tool' ? { id, output: text } : { id, answer: text };
      return answered(
        id,
        item?.type === 'client_tool' ? 'output sent' : 'answered',
        await client.respond(runId, [response]),
      );
    }
    default:
      throw new UsageError(
        sub
          ? `unknown command "actions ${sub}": use ls, approve, reject or answer`
          : 'agentq actions needs a command: ls, approve, reject or answer',
      );
  }
}
