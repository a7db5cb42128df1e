import { DelayedError } from 'bullmq';
import { z } from 'zod';
import {
  childRunId,
  isTerminal,
  toolFailed,
  toolOk,
  type ChatMessage,
  type RunSpec,
  type ToolOutcome,
} from '@agentq/shared/core';
import { parseChunkId, type ContextStore, type RunState, type RunStore } from '@agentq/shared/store';
import { type JobContext } from '@agentq/shared/jobs';
import { type Runs } from '@agentq/shared/runs';
import type { RoundCall } from '../tool-call-processor.js';
import { agentChild, itemAgents } from './agent-types.js';

const item = z.strictObject({
  prompt: z.string().min(1),
  instructions: z.string().optional(),
  context_chunk: z.string().optional(),
  /** A saved agent of the run's subagents.agents (see agent-types.ts). */
  agent: z.string().optional(),
});
const queryArgs = item;
const batchArgs = z.strictObject({ prompts: z.array(z.union([z.string().min(1), item])).min(1) });
type Item = z.infer<typeof item>;

export interface AgentQueryDeps {
  store: RunStore;
  runs: Runs;
  /** How long the call stays parked before it looks at its sub-runs again (a wake may be lost). */
  subrunRecheckMs: number;
}

/** The sub-runs' results: what the tool call returns once every child has ended. */
export interface AgentQueryResult {
  outcome: ToolOutcome;
  subrunIds?: string[];
}

/**
 * `agent_query` / `agent_query_batch`: starts one child run per prompt, with only that prompt
 * (and its context chunk) as input, each in its tenant's line like any run, and waits for them
 * as a call that waits for an answer does: its job is parked (delayed: no worker slot), and the
 * run gives its admission slot up meanwhile, so that its sub-runs can take it. Each sub-run that
 * ends wakes the job; once the last has ended, the job collects their answers, in prompt order.
 * While sub-runs work, it throws DelayedError, which BullMQ takes as "park this job".
 */
export async function runAgentQuery(
  ctx: JobContext,
  data: RoundCall,
  args: unknown,
  run: RunState,
  deps: AgentQueryDeps,
): Promise<AgentQueryResult> {
  const { job, token } = ctx;
  const tool = data.name;
  const sub = run.spec.subagents;
  if (!sub?.enabled) return { outcome: toolFailed('refused', 'sub-agents are not enabled for this run') };
  let items: Item[];
  if (tool === 'agent_query') {
    const a = queryArgs.safeParse(args);
    if (!a.success)
      return { outcome: toolFailed('invalid_arguments', `invalid arguments: ${z.prettifyError(a.error)}`) };
    items = [a.data];
  } else {
    const a = batchArgs.safeParse(args);
    if (!a.success)
      return { outcome: toolFailed('invalid_arguments', `invalid arguments: ${z.prettifyError(a.error)}`) };
    items = a.data.prompts.map((p) => (typeof p === 'string' ? { prompt: p } : p));
  }
  if (run.spec.nesting + 1 > sub.max_nesting) {
    return {
      outcome: toolFailed(
        'refused',
        `sub-agents may nest at most ${sub.max_nesting} levels deep, ` +
          `and this run is at level ${run.spec.nesting}; answer this part yourself`,
      ),
    };
  }
  if (items.length > sub.max_batch)
    return {
      outcome: toolFailed(
        'refused',
        `a batch may hold at most ${sub.max_batch} prompts (got ${items.length}); split it into smaller batches`,
      ),
    };

  let ids = data.subrunIds;
  if (!ids) {
    const agents = await itemAgents(
      items.map((it) => it.agent),
      run,
      deps.store,
    );
    if (typeof agents === 'string') return { outcome: toolFailed('refused', agents) };
    const parentCall = { depth: data.depth, index: data.index };
    const inputs: Array<{ messages: ChatMessage[]; spec?: RunSpec }> = [];
    for (const [k, it] of items.entries()) {
      const r = await childInput(it, run, deps.store.contexts);
      if (typeof r === 'string') return { outcome: toolFailed('invalid_arguments', r) };
      const agent = agents[k];
      // A saved agent's sub-run starts from its instructions, then the call's own, then the prompt.
      inputs.push(
        agent
          ? await agentChild(
              agent,
              { instructions: it.instructions, user: r.at(-1)!.content as string },
              run,
              parentCall,
              deps.store,
            )
          : { messages: r },
      );
    }
    const refused = await deps.runs.reserveSubruns(run, `${run.id}:${data.depth}:${data.index}`, items.length);
    if (refused) return { outcome: toolFailed('refused', refused) };
    // Fixed by the tool job (a redelivery makes no second child) and ending with the tree's tag.
    ids = items.map((_, k) => childRunId(run.id, `${job.id}:${k}`, job.timestamp));
    // The run waits: its slot goes to the sub-runs (a tree cannot deadlock its tenant); the job
    // that completes this round gives it back.
    await deps.runs.suspended(run.tenant, [run.id], 'subruns');
    const origin = { depth: data.depth, index: data.index, toolCallId: data.toolCallId };
    for (let k = 0; k < ids.length; k++)
      await deps.runs.createChild(run, { id: ids[k]!, index: k, ...inputs[k]! }, origin);
    await job.updateData({ ...job.data, subrunIds: ids, startedAt: job.processedOn ?? Date.now() });
  }
  if (!(await allEnded(ids, deps.store))) {
    if (!token) throw new Error('agent_query: a job without a lock token cannot wait');
    await job.moveToDelayed(Date.now() + deps.subrunRecheckMs, token);
    // A sub-run that ended between the look and the park found this job active, and its wake
    // missed it: look again now that it is parked.
    if (await allEnded(ids, deps.store)) await job.promote().catch(() => {});
    throw new DelayedError();
  }

  const children = await Promise.all(ids.map((id) => deps.store.runs.get(id)));
  const answers = children.map((c, k) => {
    if (c?.status === 'completed')
      return {
        ok: true,
        text: typeof c.output?.content === 'string' ? c.output.content : JSON.stringify(c.output?.content ?? ''),
      };
    const why = c
      ? `${c.status}${c.error ? `: ${c.error.message}` : c.stop_reason ? ` (${c.stop_reason})` : ''}`
      : 'missing';
    return { ok: false, text: `Error: sub-agent run ${ids![k]} ended ${why}` };
  });
  for (const [k, c] of children.entries()) {
    await deps.store.events.append(run.id, 'subrun.completed', {
      run_id: ids[k],
      status: c?.status ?? 'missing',
      tool_call_id: data.toolCallId,
      index: k,
    });
  }
  if (tool === 'agent_query')
    return {
      subrunIds: ids,
      outcome: answers[0].ok ? toolOk(answers[0].text) : toolFailed('subrun_failed', answers[0].text),
    };
  // A batch answers in prompt order, a failed child's error text in its place; it is an error
  // result only when no child completed.
  const texts = JSON.stringify(answers.map((a) => a.text));
  return { subrunIds: ids, outcome: answers.some((a) => a.ok) ? toolOk(texts) : toolFailed('tool_error', texts) };
}

/** Whether every sub-run has ended (a gone one has). */
async function allEnded(ids: string[], store: RunStore): Promise<boolean> {
  return (await store.runs.statuses(ids)).every((status) => !status || isTerminal(status));
}

// A child's only input: its prompt, and the text of the context chunk it was given.
async function childInput(it: Item, run: RunState, contexts: ContextStore): Promise<ChatMessage[] | string> {
  const messages: ChatMessage[] = [];
  if (it.instructions) messages.push({ role: 'system', content: it.instructions });
  let text = it.prompt;
  if (it.context_chunk !== undefined) {
    const c = parseChunkId(it.context_chunk);
    const meta = await contexts.meta(run.id);
    if (!meta) return `context_chunk "${it.context_chunk}" given, but this run has no context`;
    if (!c || !meta.documents[c.doc]) return `"${it.context_chunk}" is not a chunk id from context_chunks`;
    const chunk = await contexts.read(run.id, meta, c.doc, c.offset, c.length);
    text +=
      `\n\n<context document="${meta.documents[c.doc].name}" ` +
      `offset="${c.offset}" length="${chunk.length}">\n${chunk}\n</context>`;
  }
  messages.push({ role: 'user', content: text });
  return messages;
}
