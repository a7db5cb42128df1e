// @ts-check
// The run every scenario measures, where the benchmark lives, and agentq's names for its jobs
// and queues (read from the built shared package, so that the bare baselines build the same
// job graph as agentq).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const ROOT = join(import.meta.dirname, '..', '..');
export const BENCH = join(ROOT, 'bench');
/** @type {typeof import('@agentq/shared')} */
export const shared = await import(pathToFileURL(join(ROOT, 'packages/shared/dist/index.js')).href);
// Ids, names and options of the jobs, from agentq's job catalog (the bare baselines use the same).
const { JOB_KINDS } = shared;
/**
 * Job payloads of which only the fields their ids and names are made of are given: the catalog's
 * id and name functions read no other.
 * @typedef {Parameters<typeof JOB_KINDS.agentStep.id>[0]} AgentStepJob
 * @typedef {Parameters<typeof JOB_KINDS.toolCall.id>[0]} ToolCallJob
 * @typedef {Parameters<typeof JOB_KINDS.toolRound.id>[0]} ToolRoundJob
 */
export const jobIds = {
  /** @param {string} runId @param {number} depth */
  agentTurn: (runId, depth) => JOB_KINDS.agentStep.id(/** @type {AgentStepJob} */ ({ runId, depth })),
  /** @param {string} runId @param {number} depth @param {number} index */
  toolCall: (runId, depth, index) => JOB_KINDS.toolCall.id(/** @type {ToolCallJob} */ ({ runId, depth, index })),
  /**
   * agentq's job for a round's calls (the baselines have one job per call).
   * @param {string} runId
   * @param {number} depth
   */
  toolRound: (runId, depth) => JOB_KINDS.toolRound.id(/** @type {ToolRoundJob} */ ({ runId, depth })),
};
export const jobNames = {
  /** @param {string} runId @param {number} depth */
  agentTurn: (runId, depth) => JOB_KINDS.agentStep.name(/** @type {AgentStepJob} */ ({ runId, depth })),
  /** @param {string} runId @param {number} depth @param {string} name */
  toolCall: (runId, depth, name) => JOB_KINDS.toolCall.name(/** @type {ToolCallJob} */ ({ runId, depth, name })),
};
export const jobOptions = { agentTurn: JOB_KINDS.agentStep.options, toolCall: JOB_KINDS.toolCall.options };
export const { QUEUES } = shared;

export const ROUNDS = 3;
export const FANOUT = 3;
/** Model steps per run: the tool rounds and the final answer. */
export const STEPS = ROUNDS + 1;
export const TOOL_CALLS = ROUNDS * FANOUT;
