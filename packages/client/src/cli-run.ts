import { readFileSync } from 'node:fs';
import type { AgentqClient } from './client.js';
import { answerOf, EXIT, exitFor, int, UsageError, type Io, type Values } from './cli-common.js';
import { progressPrinter, summary, type Style } from './progress.js';
import type { CreateRunRequest, Run } from './types.js';

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

/** `agentq run <input…>`: starts a run and waits for it (following it with --follow). */
export async function cmdRun(client: AgentqClient, positionals: string[], v: Values, io: Io, errStyle: Style): Promise<number> {
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
