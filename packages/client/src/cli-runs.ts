import type { AgentqClient } from './client.js';
import { answerOf, EXIT, exitFor, int, table, UsageError, type Io, type Values } from './cli-common.js';
import { describeAction, progressPrinter, summary, type Style } from './progress.js';
import { isTerminalStatus, type Run, type RunStatus } from './types.js';
import { howToAnswer } from './waiting-run.js';

/** `agentq runs ls|get|cancel|events`. */
export async function cmdRuns(
  client: AgentqClient,
  [sub, id, ...rest]: string[],
  v: Values,
  io: Io,
  style: Style,
): Promise<number> {
  const out = (s: string) => io.stdout.write(`${s}\n`);
  const needId = () => {
    if (!id || rest.length) throw new UsageError(`agentq runs ${sub} takes one run id`);
    return id;
  };
  switch (sub) {
    case 'ls':
    case 'list': {
      const status = v.status as RunStatus | undefined;
      const limit = int(v.limit, 'limit');
      let runs: Run[];
      let next: string | null = null;
      if (v.all) {
        runs = [];
        for await (const r of client.listAllRuns({ status, limit })) runs.push(r);
      } else ({ data: runs, next } = await client.listRuns({ status, limit, after: v.after }));
      if (v.json) {
        out(JSON.stringify(v.all ? { data: runs, next: null } : { data: runs, next }, null, 2));
        return 0;
      }
      const rows = runs.map((r) => [
        r.id,
        r.status,
        r.stop_reason ?? '-',
        `${r.depth}`,
        `${r.usage_total.total_tokens}`,
        r.model,
        r.created_at,
      ]);
      out(
        rows.length
          ? table([['ID', 'STATUS', 'STOP', 'DEPTH', 'TOKENS', 'MODEL', 'CREATED'], ...rows])
          : style.dim('no runs'),
      );
      if (next) out(style.dim(`more: agentq runs ls --after ${next}`));
      return 0;
    }
    case 'get': {
      const run = await client.getRun(needId());
      if (v.json) {
        out(JSON.stringify(run, null, 2));
        return 0;
      }
      out(`${style.bold(run.id)} · ${run.model}${run.parent_run_id ? ` · sub-run of ${run.parent_run_id}` : ''}`);
      out(isTerminalStatus(run.status) ? summary(run, style) : `${run.status} · depth ${run.depth}/${run.max_depth}`);
      for (const item of run.required_action?.items ?? [])
        out(`  ⏸ ${describeAction(item)} ${style.dim(`· ${item.id}`)}\n    ${howToAnswer(item)}`);
      const answer = answerOf(run);
      if (answer) out(`\n${answer}`);
      return 0;
    }
    case 'cancel': {
      const run = await client.cancelRun(needId());
      out(v.json ? JSON.stringify(run, null, 2) : `${run.id} ${run.status}`);
      return 0;
    }
    case 'events': {
      const toolOutputs = Boolean(v.outputs);
      const print = progressPrinter(out, { style, toolOutputs });
      let status: RunStatus | undefined;
      for await (const e of client.streamEvents(needId())) {
        if (v.json) out(JSON.stringify(e));
        else print(e);
        if ('run' in e.data) status = e.data.run.status;
      }
      return status ? exitFor(status) : EXIT.apiError;
    }
    default:
      throw new UsageError(
        sub
          ? `unknown command "runs ${sub}": use ls, get, cancel or events`
          : 'agentq runs needs a command: ls, get, cancel or events',
      );
  }
}
