// The run every scenario measures, where the benchmark lives, and agentq's names for its jobs
// and queues (read from the built shared package, so that the bare baselines build the same
// job graph as agentq).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const ROOT = join(import.meta.dirname, '..', '..');
export const BENCH = join(ROOT, 'bench');
export const shared = await import(pathToFileURL(join(ROOT, 'packages/shared/dist/index.js')).href);
// Ids, names and options of the jobs, from agentq's job catalog (the bare baselines use the same).
const { JOB_KINDS } = shared;
export const jobIds = {
  agentTurn: (runId, depth) => JOB_KINDS.agentStep.id({ runId, depth }),
  toolCall: (runId, depth, index) => JOB_KINDS.toolCall.id({ runId, depth, index }),
  /** agentq's job for a round's calls (the baselines have one job per call). */
  toolRound: (runId, depth) => JOB_KINDS.toolRound.id({ runId, depth }),
};
export const jobNames = {
  agentTurn: (runId, depth) => JOB_KINDS.agentStep.name({ runId, depth }),
  toolCall: (runId, depth, name) => JOB_KINDS.toolCall.name({ runId, depth, name }),
};
export const jobOptions = { agentTurn: JOB_KINDS.agentStep.options, toolCall: JOB_KINDS.toolCall.options };
export const { QUEUES } = shared;

export const ROUNDS = 3;
export const FANOUT = 3;
/** Model steps per run: the tool rounds and the final answer. */
export const STEPS = ROUNDS + 1;
export const TOOL_CALLS = ROUNDS * FANOUT;
