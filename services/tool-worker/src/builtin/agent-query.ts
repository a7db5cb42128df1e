import { createHash } from 'node:crypto';
import { WaitingChildrenError, type Job, type Queue } from 'bullmq';
import { z } from 'zod';
import {
  jobIds,
  jobNames,
  jobOptions,
  parseChunkId,
  startRunTrace,
  type AgentTurnJob,
  type ChatMessage,
  type ContextStore,
  type RunSpec,
  type RunState,
  type RunStore,
  type ToolCallJob,
} from '@agentq/shared';
import type { ToolCallOutcome } from '../tool-result.js';

const item = z.strictObject({ prompt: z.string().min(1), instructions: z.string().optional(), context_chunk: z.string().optional() });
const queryArgs = item;
const batchArgs = z.strictObject({ prompts: z.array(z.union([z.string().min(1), item])).min(1) });
type Item = z.infer<typeof item>;

export interface AgentQueryDeps {
  store: RunStore;
  contexts: ContextStore;
  agentQueue: Queue;
}

/** The sub-runs' results: what the tool call returns once every child has ended. */
export type AgentQueryStep = { kind: 'result'; outcome: ToolCallOutcome; subrunIds?: string[] };

const fail = (tool: string, why: string): AgentQueryStep => ({ kind: 'result', outcome: { isError: true, content: `Error executing ${tool}: ${why}` } });

/** A child run id fixed by the tool job, so that a redelivered job creates no second child. */
export function childRunId(job: Pick<Job, 'id' | 'timestamp'>, k: number): string {
  const time = job.timestamp.toString(36).padStart(9, '0').slice(-9);
  const hash = BigInt(`0x${createHash('sha256').update(`${job.id}:${k}`).digest('hex').slice(0, 24)}`).toString(36).padStart(12, '0').slice(-12);
  return `run_${time}${hash}`;
}

/**
 * `agent_query` / `agent_query_batch`: starts one child run per prompt, with only that prompt
 * (and its context chunk) as input, adds their first turns as children of this tool job and
 * waits the BullMQ way (moveToWaitingChildren: no worker slot is held). When the last child
 * ends the job runs again and collects their answers, in prompt order. While children run,
 * it throws WaitingChildrenError, which BullMQ takes as "park this job".
 */
export async function runAgentQuery(job: Job, token: string | undefined, data: ToolCallJob, args: unknown, run: RunState, deps: AgentQueryDeps): Promise<AgentQueryStep> {
  const tool = data.name;
  const sub = run.spec.subagents;
  if (!sub?.enabled) return fail(tool, 'sub-agents are not enabled for this run');
  let items: Item[];
  if (tool === 'agent_query') {
    const a = queryArgs.safeParse(args);
    if (!a.success) return fail(tool, `invalid arguments: ${z.prettifyError(a.error)}`);
    items = [a.data];
  } else {
    const a = batchArgs.safeParse(args);
    if (!a.success) return fail(tool, `invalid arguments: ${z.prettifyError(a.error)}`);
    items = a.data.prompts.map((p) => (typeof p === 'string' ? { prompt: p } : p));
  }
  if (run.spec.nesting + 1 > sub.max_nesting) return fail(tool, `sub-agents may nest at most ${sub.max_nesting} levels deep, and this run is at level ${run.spec.nesting}; answer this part yourself`);
  if (items.length > sub.max_batch) return fail(tool, `a batch may hold at most ${sub.max_batch} prompts (got ${items.length}); split it into smaller batches`);

  let ids = (job.data as { subrunIds?: string[] }).subrunIds;
  if (!ids) {
    const inputs: ChatMessage[][] = [];
    for (const it of items) {
      const r = await childInput(it, run, deps.contexts);
      if (typeof r === 'string') return fail(tool, r);
      inputs.push(r);
    }
    ids = items.map((_, k) => childRunId(job, k));
    const spec: RunSpec = {
      model: run.spec.model,
      ...(run.spec.tools ? { tools: run.spec.tools } : {}),
      max_depth: run.spec.max_depth,
      ...(run.spec.max_total_tokens !== undefined ? { max_total_tokens: run.spec.max_total_tokens } : {}),
      ...(run.spec.deadline_at !== undefined ? { deadline_at: run.spec.deadline_at } : {}),
      on_budget_exhausted: run.spec.on_budget_exhausted,
      subagents: sub,
      metadata: {},
      ancestors: [...run.spec.ancestors, run.id],
      nesting: run.spec.nesting + 1,
      parent_job: { id: job.id!, queue: job.queueQualifiedName },
    };
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k];
      if (!(await deps.store.getOwner(id))) {
        await deps.store.createRun({ id, owner: run.owner, spec, messages: inputs[k], parentRunId: run.id, rootRunId: run.rootRunId });
        await deps.store.addChild(run.id, id);
        await deps.store.appendEvent(run.id, 'subrun.started', { run_id: id, depth: data.depth, tool_call_id: data.toolCallId, index: k });
      }
      // The sub-run's trace hangs under this tool call's span.
      const first: AgentTurnJob = { runId: id, depth: 0, ...startRunTrace(id, spec.model) };
      await deps.agentQueue.add(jobNames.agentTurn(id, 0), first, {
        ...jobOptions.agentTurn,
        jobId: jobIds.agentTurn(id, 0),
        parent: { id: job.id!, queue: job.queueQualifiedName },
        ignoreDependencyOnFailure: true,
      });
    }
    await job.updateData({ ...job.data, subrunIds: ids });
    if (token && (await job.moveToWaitingChildren(token))) throw new WaitingChildrenError();
  }

  const children = await Promise.all(ids.map((id) => deps.store.getRun(id)));
  const answers = children.map((c, k) => {
    if (c?.status === 'completed') return { ok: true, text: typeof c.output?.content === 'string' ? c.output.content : JSON.stringify(c.output?.content ?? '') };
    const why = c ? `${c.status}${c.error ? `: ${c.error.message}` : c.stop_reason ? ` (${c.stop_reason})` : ''}` : 'missing';
    return { ok: false, text: `Error: sub-agent run ${ids![k]} ended ${why}` };
  });
  for (const [k, c] of children.entries()) {
    await deps.store.appendEvent(run.id, 'subrun.completed', { run_id: ids[k], status: c?.status ?? 'missing', tool_call_id: data.toolCallId, index: k });
  }
  if (tool === 'agent_query') {
    return { kind: 'result', subrunIds: ids, outcome: { isError: !answers[0].ok, content: answers[0].ok ? answers[0].text : `Error executing agent_query: ${answers[0].text}` } };
  }
  return { kind: 'result', subrunIds: ids, outcome: { isError: answers.every((a) => !a.ok), content: JSON.stringify(answers.map((a) => a.text)) } };
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
    text += `\n\n<context document="${meta.documents[c.doc].name}" offset="${c.offset}" length="${chunk.length}">\n${chunk}\n</context>`;
  }
  messages.push({ role: 'user', content: text });
  return messages;
}
