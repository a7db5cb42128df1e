import { parseArgs } from 'node:util';
import { AgentqClient } from './client.js';
import { EXIT, OPTIONS, table, UsageError, type Io } from './cli-common.js';
import { apiKeyProblem, urlProblem, type CliConfig } from './cli-config.js';
import { cmdActions } from './cli-actions.js';
import { cmdAgents } from './cli-agents.js';
import { cmdRun } from './cli-run.js';
import { cmdRuns } from './cli-runs.js';
import { ActionResolvedError, AgentqApiError, AgentqTimeoutError } from './errors.js';
import { styleFor } from './progress.js';

export { EXIT, type Io } from './cli-common.js';

export const HELP = `agentq: run and inspect agentq runs

Usage:
  agentq run <input…> [options]     start a run, wait for it, print the answer ("-" reads stdin)
  agentq runs ls [--status s] [--limit n] [--after id] [--all]
  agentq runs get <id>              the run and its answer
  agentq runs cancel <id>           cancel a run and its sub-runs
  agentq runs events <id>           follow a run's events until it ends (--outputs: with tool outputs)
  agentq tools                      the tools runs can use
  agentq agents ls                  saved agents, each at its latest version
  agentq agents get <name>[@v]      an agent (at a version) as JSON
  agentq agents put <file>          save an agent from a YAML or JSON file ("-": stdin); its name
                                    is the file's "name", else the file name; same content: no new version
  agentq agents rm <name>           delete an agent and its versions
  agentq actions ls [--status pending|resolved] [--limit n] [--after id] [--all]
                                    requests for an answer across your runs, newest first
  agentq actions approve <action-id> [--arguments <json>]   let a tool call run
  agentq actions reject <action-id> [--reason <text>]       refuse it: it never runs
  agentq actions answer <action-id> <text…>   answer a question, or give a client tool's output

Options of run:
  -f, --follow              show progress as it happens: steps, tool calls, tokens, sub-runs
      --outputs             with --follow: also what each tool call returned
      --json                print the final run object (progress, if any, goes to stderr)
  -a, --agent <name[@v]>    run as a saved agent (options given here win over its fields)
  -m, --model <name>        model (default: the server's MODEL)
  -t, --tools <a,b>         allowlist of tool names or globs (crm__*)
  -d, --max-depth <n>       tool rounds allowed, 1..100
  -i, --instructions <s>    system prompt
      --max-total-tokens <n>  token budget for the run tree
      --on-budget-exhausted <final_answer|stop>  at a budget: one last answer, or stop (incomplete)
      --timeout-ms <n>      wall-clock deadline of the run
      --subagents           allow agent_query / agent_query_batch
      --metadata <json>     echoed back on the run
      --idempotency-key <k> retrying with the same key returns the same run
      --detach              print the run id and exit without waiting
      --approve-tools <a,b> calls of these tools (names or globs) wait for a yes
      --approve-destructive calls of MCP tools not marked read-only wait for a yes
      --approval-timeout-ms <n>  how long one request may wait
      --on-approval-timeout <reject|stop>  then: tell the model no (default), or end the run
      --human-input         let the model ask you questions (ask_human)
      --client-tools <json|@file>  tools you run yourself: you type each call's output

While the run waits for an answer, run asks in the terminal: approve, reject (with a reason)
or edit the arguments of a call; a client tool's output; the answer to a question (a number
picks a choice). When stdin or stderr is not a terminal it asks nothing: it prints the
requests and the agentq actions commands that answer them, and goes on waiting.

Options of actions approve | reject | answer:
      --arguments <json>    approve: run the call with these arguments (the API checks them
                            against the tool's input schema)
      --reason <text>       reject: why; the model reads it
      --run <run-id>        the run to answer on (default: the run named in the action id;
                            for a sub-run's request its root works too)
  answer's text "-" reads it from stdin.

Other options:
      --json                machine-readable output (events: one JSON object per line)
      --url <url>           the API (env AGENTQ_URL, default http://127.0.0.1:3000)
      --api-key <key>       an API key (env AGENTQ_API_KEY)
  -h, --help                this help

Exit codes: 0 completed, 1 failed, 2 incomplete, 3 cancelled (for run, runs events);
4 the API answered an error or could not be reached; 5 the request was decided already
(actions approve|reject|answer); 64 bad command line or environment; 130 interrupted.
Ctrl-C while waiting cancels the run; a second Ctrl-C quits at once.
`;

/** The command line's flags and positionals; a flag it does not know is a usage error. */
function parseArgv(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** The CLI: returns the exit code. `config` comes from loadCliConfig; flags override it. */
export async function main(argv: string[], config: CliConfig, io: Io): Promise<number> {
  const style = styleFor(io.stdout, config.color);
  let baseUrl = config.url;
  try {
    const { values: v, positionals } = parseArgv(argv);
    const [cmd, ...args] = positionals;
    if (v.help || !cmd || cmd === 'help') {
      if (!cmd && !v.help) {
        io.stderr.write(HELP);
        return EXIT.usage;
      }
      io.stdout.write(HELP);
      return 0;
    }
    const badUrl = v.url === undefined ? null : urlProblem(v.url);
    if (badUrl) throw new UsageError(`--url ${badUrl} (got "${v.url}")`);
    const badKey = v['api-key'] === undefined ? null : apiKeyProblem(v['api-key']);
    if (badKey) throw new UsageError(`--api-key ${badKey}`);
    baseUrl = v.url ?? baseUrl;
    const client = new AgentqClient({ baseUrl, apiKey: v['api-key'] ?? config.apiKey });
    switch (cmd) {
      case 'run':
        return await cmdRun(client, args, v, io, styleFor(io.stderr, config.color));
      case 'runs':
        return await cmdRuns(client, args, v, io, style);
      case 'actions':
        return await cmdActions(client, args, v, io, style);
      case 'agents':
        return await cmdAgents(client, args, v, io, style);
      case 'tools': {
        const tools = await client.listTools();
        if (v.json) io.stdout.write(`${JSON.stringify(tools, null, 2)}\n`);
        else
          io.stdout.write(
            tools.length
              ? `${table(tools.map((t) => [t.name, t.description.split('\n')[0]]))}\n`
              : `${style.dim('no tools')}\n`,
          );
        return 0;
      }
      default:
        throw new UsageError(`unknown command "${cmd}" (see agentq --help)`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`agentq: ${err.message}\n`);
      return EXIT.usage;
    }
    if (err instanceof ActionResolvedError) {
      for (const r of err.resolved)
        io.stderr.write(`agentq: ${r.id} was decided already: ${r.decision}${r.at ? ` at ${r.at}` : ''}\n`);
      if (!err.resolved.length) io.stderr.write(`agentq: ${err.message}\n`);
      return EXIT.alreadyDecided;
    }
    if (err instanceof AgentqApiError) {
      io.stderr.write(`agentq: ${err.status} ${err.code}: ${err.message}\n`);
      if (Array.isArray(err.details))
        for (const d of err.details) io.stderr.write(`  ${d.field ?? ''}: ${d.message ?? JSON.stringify(d)}\n`);
      return EXIT.apiError;
    }
    if (err instanceof AgentqTimeoutError) {
      io.stderr.write(`agentq: ${err.message}\n`);
      return EXIT.apiError;
    }
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const hint = err instanceof TypeError ? `: cannot reach ${baseUrl} (set AGENTQ_URL or --url)` : '';
    io.stderr.write(`agentq: ${(err as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ''}${hint}\n`);
    return EXIT.apiError;
  }
}
