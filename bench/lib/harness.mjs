// @ts-check
// What the scenarios run on, in one import for the scripts and tests that use it whole
// (bench/timeline.mjs, test/process/bench.test.ts): a Redis of the benchmark's own
// (redis-server.mjs), the agentq services as built processes (start-agentq.mjs), the bare-BullMQ
// baselines (start-bare.mjs), the scripted model and the no-op MCP server (stack.mjs), the
// ways to submit runs and see them finish (runs.mjs), what the processes use of the machine
// (machine.mjs), and the run they all measure (workload.mjs).
export { cpuDelta, cpuSnapshot, foreignShare, memory, waitQuiet } from './machine.mjs';
export { commandStats, readProbes } from './redis-cost.mjs';
export { deletePrefix, startRedis } from './redis-server.mjs';
export {
  agentqOnce,
  agentqRunTimes,
  bareClient,
  bareRunTimes,
  submitAgentqRun,
  waitAgentqRun,
  waitCompleted,
} from './runs.mjs';
export { startMcp, startModel } from './stack.mjs';
export { startAgentq } from './start-agentq.mjs';
export { startBare } from './start-bare.mjs';
export { FANOUT, jobIds, jobNames, jobOptions, QUEUES, ROOT, ROUNDS, STEPS, TOOL_CALLS } from './workload.mjs';
