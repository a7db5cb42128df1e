import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { AgentqClient } from './client.js';
import { apiKeyProblem, urlProblem, type CliConfig } from './cli-config.js';
import { AgentqApiError, AgentqTimeoutError } from './errors.js';
import { progressPrinter, styleFor, summary, type Style } from './progress.js';
import { isTerminalStatus, type CreateRunRequest, type Run, type RunStatus } from './types.js';

export const HELP = `agentq: run and inspect agentq runs

Usage:
  agentq run <input…> [options]     start a run, wait for it, print the answer ("-" reads stdin)
  agentq runs ls [--status s] [--limit n] [--after id] [--all]
  agentq runs get <id>              the run and its answer
  agentq runs cancel <id>           cancel a run and its sub-runs
  agentq runs events <id>           follow a run's events until it ends (--outputs: with tool outputs)
  agentq tools                      the tools runs can use

Options of run:
  -f, --follow              show progress as it happens: steps, tool calls, tokens, sub-runs
      --outputs             with --follow: also what each tool call returned
      --json                print the final run object (progress, if any, goes to stderr)
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

Other options:
      --json                machine-readable output (events: one JSON object per line)
      --url <url>           the API (env AGENTQ_URL, default http://127.0.0.1:3000)
      --api-key <key>       an API key (env AGENTQ_API_KEY)
  -h, --help                this help

Exit codes: 0 completed, 1 failed, 2 incomplete, 3 cancelled (for run, runs events);
4 the API answered an error or could not be reached; 64 bad command line or environment;
130 interrupted.
Ctrl-C while waiting cancels the run; a second Ctrl-C quits at once.
`;

export const EXIT = { completed: 0, failed: 1, incomplete: 2, cancelled: 3, apiError: 4, usage: 64, interrupted: 130 } as const;

const exitFor = (status: RunStatus): number => (isTerminalStatus(status) ? EXIT[status] : EXIT.apiError);

export interface Io {
  stdout: { write(s: string): unknown; isTTY?: boolean };
  stderr: { write(s: string): unknown; isTTY?: boolean };
  /** Registers a Ctrl-C handler; returns its removal. */
  onInterrupt?: (handler: () => void) => () => void;
  readStdin?: () => string;
}

class UsageError extends Error {}

const OPTIONS = {
  follow: { type: 'boolean', short: 'f' },
  outputs: { type: 'boolean' },
  json: { type: 'boolean' },
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
  detach: { type: 'boolean' },
  status: { type: 'string' },
  limit: { type: 'string' },
  after: { type: 'string' },
  all: { type: 'boolean' },
  url: { type: 'string' },
  'api-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

const int = (v: string | undefined, name: string): number | undefined => {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number (got "${v}")`);
  return Number(v);
};

function runRequest(input: string, v: Values): CreateRunRequest {
  let metadata: Record<string, unknown> | undefined;
  if (v.metadata !== undefined) {
    try {
      metadata = JSON.parse(v.metadata);
    } catch {
      throw new UsageError('--metadata must be a JSON object');
    }
  }
  const body: CreateRunRequest = { input };
  if (v.model) body.model = v.model;
  if (v.tools) body.tools = v.tools.split(',').map((t) => t.trim()).filter(Boolean);
  if (v.instructions) body.instructions = v.instructions;
  if (v['max-depth'] !== undefined) body.max_depth = int(v['max-depth'], 'max-depth');
  if (v['max-total-tokens'] !== undefined) body.max_total_tokens = int(v['max-total-tokens'], 'max-total-tokens');
  if (v['timeout-ms'] !== undefined) body.timeout_ms = int(v['timeout-ms'], 'timeout-ms');
  const policy = v['on-budget-exhausted'];
  if (policy !== undefined) {
    if (policy !== 'final_answer' && policy !== 'stop') throw new UsageError('--on-budget-exhausted is final_answer or stop');
    body.on_budget_exhausted = policy;
  }
  if (v.subagents) body.subagents = { enabled: true };
  if (metadata) body.metadata = metadata;
  return body;
}

const answerOf = (run: Run) => (typeof run.output?.content === 'string' ? run.output.content : run.output ? JSON.stringify(run.output.content) : '');

/** Waits for a run, following its events when asked; Ctrl-C cancels it (twice: quits). */
async function finish(client: AgentqClient, run: Run, v: Values, io: Io, style: Style, progress: (line: string) => void): Promise<Run | 'interrupted'> {
  const quit = new AbortController();
  let interrupts = 0;
  const off = io.onInterrupt?.(() => {
    if (++interrupts > 1) return quit.abort();
    progress(style.bad(`cancelling ${run.id}… (Ctrl-C again to quit without waiting)`));
    client.cancelRun(run.id).catch((err) => progress(style.bad(`cancel failed: ${(err as Error).message}`)));
  });
  try {
    if (!v.follow) return await client.waitForRun(run.id, { signal: quit.signal, timeoutMs: Number.MAX_SAFE_INTEGER });
    const toolOutputs = Boolean(v.outputs);
    const print = progressPrinter(progress, { style, toolOutputs });
    for await (const e of client.streamEvents(run.id, { signal: quit.signal })) {
      print(e);
      if ('run' in e.data) return e.data.run; // the terminal event
    }
    return await client.getRun(run.id);
  } catch (err) {
    if (quit.signal.aborted) return 'interrupted';
    throw err;
  } finally {
    off?.();
  }
}

async function cmdRun(client: AgentqClient, positionals: string[], v: Values, io: Io, errStyle: Style): Promise<number> {
  let input = positionals.join(' ');
  if (input === '-') input = (io.readStdin ?? (() => readFileSync(0, 'utf8')))().trim();
  if (!input) throw new UsageError('agentq run needs the input: agentq run "What is 2+2?"');
  const created = await client.createRun(runRequest(input, v), { idempotencyKey: v['idempotency-key'] });
  if (v.detach) {
    io.stdout.write(v.json ? `${JSON.stringify(created, null, 2)}\n` : `${created.id}\n`);
    return 0;
  }
  // Progress is for people: on stderr, so stdout holds only the answer (or the JSON).
  const progress = (line: string) => io.stderr.write(`${line}\n`);
  if (v.follow) progress(errStyle.dim(`${created.id} · ${created.model} · max depth ${created.max_depth}`));
  const run = await finish(client, created, v, io, errStyle, progress);
  if (run === 'interrupted') return EXIT.interrupted;
  if (v.json) io.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
  else {
    if (!v.follow) progress(summary(run, errStyle));
    const answer = answerOf(run);
    if (answer) io.stdout.write(`${answer}\n`);
  }
  return exitFor(run.status);
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

async function cmdRuns(client: AgentqClient, [sub, id, ...rest]: string[], v: Values, io: Io, style: Style): Promise<number> {
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
      if (v.json) return out(JSON.stringify(v.all ? { data: runs, next: null } : { data: runs, next }, null, 2)), 0;
      const rows = runs.map((r) => [r.id, r.status, r.stop_reason ?? '-', `${r.depth}`, `${r.usage_total.total_tokens}`, r.model, r.created_at]);
      out(rows.length ? table([['ID', 'STATUS', 'STOP', 'DEPTH', 'TOKENS', 'MODEL', 'CREATED'], ...rows]) : style.dim('no runs'));
      if (next) out(style.dim(`more: agentq runs ls --after ${next}`));
      return 0;
    }
    case 'get': {
      const run = await client.getRun(needId());
      if (v.json) return out(JSON.stringify(run, null, 2)), 0;
      out(`${style.bold(run.id)} · ${run.model}${run.parent_run_id ? ` · sub-run of ${run.parent_run_id}` : ''}`);
      out(isTerminalStatus(run.status) ? summary(run, style) : `${run.status} · depth ${run.depth}/${run.max_depth}`);
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
      throw new UsageError(sub ? `unknown command "runs ${sub}": use ls, get, cancel or events` : 'agentq runs needs a command: ls, get, cancel or events');
  }
}

/** The CLI: returns the exit code. `config` comes from loadCliConfig; flags override it. */
export async function main(argv: string[], config: CliConfig, io: Io): Promise<number> {
  const style = styleFor(io.stdout, config.color);
  let baseUrl = config.url;
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const { values: v, positionals } = parsed;
    const [cmd, ...args] = positionals;
    if (v.help || !cmd || cmd === 'help') {
      if (!cmd && !v.help) return io.stderr.write(HELP), EXIT.usage;
      return io.stdout.write(HELP), 0;
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
      case 'tools': {
        const tools = await client.listTools();
        if (v.json) io.stdout.write(`${JSON.stringify(tools, null, 2)}\n`);
        else io.stdout.write(tools.length ? `${table(tools.map((t) => [t.name, t.description.split('\n')[0]]))}\n` : `${style.dim('no tools')}\n`);
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
    if (err instanceof AgentqApiError) {
      io.stderr.write(`agentq: ${err.status} ${err.code}: ${err.message}\n`);
      if (Array.isArray(err.details)) for (const d of err.details) io.stderr.write(`  ${d.field ?? ''}: ${d.message ?? JSON.stringify(d)}\n`);
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
