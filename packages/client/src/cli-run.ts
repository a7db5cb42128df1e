import { readFileSync, statSync } from 'node:fs';
import type { AgentqClient } from './client.js';
import { answerOf, EXIT, exitFor, int, UsageError, type Io, type Values } from './cli-common.js';
import { AgentqTimeoutError } from './errors.js';
import { poll } from './poll.js';
import { progressPrinter, summary, type Style } from './progress.js';
import { isTerminalStatus, type ApprovalPolicy, type ClientTool, type CreateRunRequest, type Run } from './types.js';
import { waitingRunHandler } from './waiting-run.js';

/** The largest --client-tools file read (the API takes far less). */
const MAX_CLIENT_TOOLS_FILE = 1024 * 1024;

/** `--client-tools`: a JSON array of function tools, or `@path` to a file holding one. */
function clientTools(arg: string): ClientTool[] {
  let text = arg;
  if (arg.startsWith('@')) {
    const path = arg.slice(1);
    let size: number;
    try {
      size = statSync(path).size;
    } catch (err) {
      throw new UsageError(
        `--client-tools: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      );
    }
    if (size > MAX_CLIENT_TOOLS_FILE)
      throw new UsageError(`--client-tools: ${path} is over ${MAX_CLIENT_TOOLS_FILE} bytes`);
    text = readFileSync(path, 'utf8');
  }
  let tools: unknown;
  try {
    tools = JSON.parse(text);
  } catch {
    throw new UsageError(
      '--client-tools must be a JSON array of {"type": "function", "function": {"name", …}} (or @file holding one)',
    );
  }
  if (!Array.isArray(tools))
    throw new UsageError('--client-tools must be a JSON array of {"type": "function", "function": {"name", …}}');
  return tools as ClientTool[]; // the API checks each tool and names the bad field
}

/** `--approve-tools`, `--approve-destructive` and their timeout: the run's approval policy, if any. */
function approvalPolicy(v: Values): ApprovalPolicy | undefined {
  const tools = v['approve-tools']
    ?.split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  const timeout = int(v['approval-timeout-ms'], 'approval-timeout-ms');
  const onTimeout = v['on-approval-timeout'];
  if (onTimeout !== undefined && onTimeout !== 'reject' && onTimeout !== 'stop')
    throw new UsageError('--on-approval-timeout is reject or stop');
  if (!tools?.length && !v['approve-destructive']) {
    if (timeout !== undefined || onTimeout !== undefined)
      throw new UsageError(
        '--approval-timeout-ms and --on-approval-timeout go with --approve-tools or --approve-destructive',
      );
    return undefined;
  }
  return {
    ...(tools?.length ? { tools } : {}),
    ...(v['approve-destructive'] ? { destructive: true } : {}),
    ...(timeout !== undefined ? { timeout_ms: timeout } : {}),
    ...(onTimeout !== undefined ? { on_timeout: onTimeout } : {}),
  };
}

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
  if (v.agent) body.agent = v.agent;
  if (v.model) body.model = v.model;
  if (v.tools)
    body.tools = v.tools
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
  if (v.instructions) body.instructions = v.instructions;
  if (v['max-depth'] !== undefined) body.max_depth = int(v['max-depth'], 'max-depth');
  if (v['max-total-tokens'] !== undefined) body.max_total_tokens = int(v['max-total-tokens'], 'max-total-tokens');
  if (v['timeout-ms'] !== undefined) body.timeout_ms = int(v['timeout-ms'], 'timeout-ms');
  const policy = v['on-budget-exhausted'];
  if (policy !== undefined) {
    if (policy !== 'final_answer' && policy !== 'stop')
      throw new UsageError('--on-budget-exhausted is final_answer or stop');
    body.on_budget_exhausted = policy;
  }
  if (v.subagents) body.subagents = { enabled: true };
  const approval = approvalPolicy(v);
  if (approval) body.approval = approval;
  if (v['human-input']) body.human_input = true;
  if (v['client-tools'] !== undefined) body.client_tools = clientTools(v['client-tools']);
  if (metadata) body.metadata = metadata;
  return body;
}

/**
 * Waits for a run, following its events when asked; while it waits for answers, asks for them
 * in the terminal (or says how to give them). Ctrl-C cancels it (twice: quits).
 */
async function finish(
  client: AgentqClient,
  run: Run,
  v: Values,
  io: Io,
  style: Style,
  progress: (line: string) => void,
): Promise<Run | 'interrupted'> {
  const quit = new AbortController();
  let interrupts = 0;
  const off = io.onInterrupt?.(() => {
    if (++interrupts > 1) return quit.abort();
    progress(style.bad(`cancelling ${run.id}… (Ctrl-C again to quit without waiting)`));
    client.cancelRun(run.id).catch((err) => progress(style.bad(`cancel failed: ${(err as Error).message}`)));
  });
  // Without --follow no progress line has described a request, so its hint does.
  const waiting = waitingRunHandler(client, run.id, {
    openPrompter: io.openPrompter,
    write: progress,
    style,
    describe: !v.follow,
  });
  try {
    if (!v.follow) {
      // Polled as waitForRun does, looking at each state for requests to answer.
      const finished = async () => {
        const now = await client.getRun(run.id, { signal: quit.signal });
        if (now.status === 'requires_action' && now.required_action) await waiting(now.required_action.items);
        return isTerminalStatus(now.status) ? now : undefined;
      };
      const poller = { timeoutMs: Number.MAX_SAFE_INTEGER, intervalMs: 200, maxIntervalMs: 2000, signal: quit.signal };
      return await poll(finished, poller, () => new AgentqTimeoutError(`run ${run.id} did not finish`, undefined));
    }
    const toolOutputs = Boolean(v.outputs);
    const print = progressPrinter(progress, { style, toolOutputs });
    for await (const e of client.streamEvents(run.id, { signal: quit.signal })) {
      print(e);
      if (e.event === 'action.required') await waiting(e.data.items);
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

/** `agentq run <input…>`: starts a run and waits for it (following it with --follow). */
export async function cmdRun(
  client: AgentqClient,
  positionals: string[],
  v: Values,
  io: Io,
  errStyle: Style,
): Promise<number> {
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
