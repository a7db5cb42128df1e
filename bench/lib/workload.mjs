// @ts-check
// The run every scenario measures, where the benchmark lives, and agentq's names for its jobs
// and queues (read from the built shared package, so that the bare baselines build the same
// job graph as agentq).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const ROOT = join(import.meta.dirname, '..', '..');
export const BENCH = join(ROOT, 'bench');
/** The parts the shared package exports, by subpath. */
export const SHARED_PARTS = ['core', 'infra', 'store', 'jobs', 'runs'];
/**
 * The built shared package of a checkout as one object: its parts merged, or, for a checkout
 * built before the package had parts, its one entry point.
 * @param {string} root
 * @returns {Promise<SharedModule>}
 */
export async function sharedOf(root) {
  const dist = join(root, 'packages/shared/dist');
  if (!existsSync(join(dist, 'core'))) return import(pathToFileURL(join(dist, 'index.js')).href);
  const parts = await Promise.all(SHARED_PARTS.map((p) => import(pathToFileURL(join(dist, p, 'index.js')).href)));
  return Object.assign({}, ...parts);
}
/**
 * @typedef {typeof import('@agentq/shared/core') & typeof import('@agentq/shared/infra') &
 *   typeof import('@agentq/shared/store') & typeof import('@agentq/shared/jobs') &
 *   typeof import('@agentq/shared/runs')} SharedModule
 */
export const shared = await sharedOf(ROOT);
// Ids, names and options of the jobs, from agentq's job catalog (the bare baselines use the same).
const { JOB_KINDS, toolCallJobId } = shared;
export const jobIds = {
  /** @param {string} runId @param {number} depth */
  agentTurn: (runId, depth) => JOB_KINDS.agentStep.id({ runId, depth }),
  /**
   * A call's job in the baselines (one job per call); agentq's job for a round's calls has its
   * first call's id.
   * @param {string} runId @param {number} depth @param {number} index
   */
  toolCall: (runId, depth, index) => toolCallJobId({ runId, depth, index }),
};
export const jobNames = {
  /** @param {string} runId @param {number} depth */
  agentTurn: (runId, depth) => JOB_KINDS.agentStep.name({ runId, depth }),
  /** @param {string} runId @param {number} depth @param {string} name */
  toolCall: (runId, depth, name) => `${runId} · step ${depth} · ${name}`,
};
export const jobOptions = { agentTurn: JOB_KINDS.agentStep.options, toolCall: JOB_KINDS.toolCalls.options };
export const { QUEUES } = shared;

export const ROUNDS = 3;
export const FANOUT = 3;
/** Model steps per run: the tool rounds and the final answer. */
export const STEPS = ROUNDS + 1;
export const TOOL_CALLS = ROUNDS * FANOUT;
