// The shapes the benchmark passes around, for the JSDoc of its .mjs files (bench/tsconfig.json):
// the processes it starts, the stacks it measures, the context scenarios share and the results
// a full run writes to bench/results/latest.json.
import type { ChildProcess } from 'node:child_process';
import type { Redis } from 'ioredis';

/** A process the benchmark watches: a name for the tables and its pid. */
export interface Proc {
  name: string;
  pid: number;
}

/** How a child process ended. */
export interface Exit {
  code: number | null;
  signal?: NodeJS.Signals | null;
}

/** A child process the benchmark spawned (procs.mjs). */
export interface Spawned extends Proc {
  child: ChildProcess;
  /** Its last lines of output, shown when it dies unexpectedly. */
  tail: string[];
  running: boolean;
  stopping: boolean;
  listeners: Set<(line: string) => void>;
  exited: Promise<Exit>;
}

/** The benchmark's Redis (redis-server.mjs). */
export interface BenchRedis {
  url: string;
  /** A redis-server of the benchmark's own, which it may empty and cap. */
  own: boolean;
  pid: number | null;
  dir: string | null;
  stop(): Promise<void>;
}

/** CPU ms so far by process name (machine.mjs); `machine` and `at` are not enumerable. */
export type CpuSnapshot = Record<string, number> & { machine?: number; at?: number };

/** Percentiles and the like of a list of numbers (stats.mjs). */
export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  min: number;
  max: number;
  mean: number;
}

/** An MCP server as mcp.json names it: stdio (command, args) or Streamable HTTP (url). */
export interface McpConfig {
  command?: string;
  args?: string[];
  url?: string;
}

/** The key names of a run the benchmark reads (the shared package's runKeys has more). */
export interface RunKeys {
  run: string;
  events: string;
}

/** A started system under measurement (stack.mjs). */
export interface Stack {
  kind: 'agentq' | 'bare' | 'loop';
  prefix: string;
  queuePrefix: string;
  config: Record<string, unknown>;
  /** The agent queue's completed set, whose size tells how many step jobs have finished. */
  completedKey: string;
  processes(): Proc[];
  servicePids(): number[];
  stop(): Promise<void>;
  /** agentq's only. */
  apiUrl?: string;
  runKeys?: (id: string) => RunKeys;
}

/** An agentq stack: its API and its run keys are there. */
export type AgentqStack = Stack & { apiUrl: string; runKeys: (id: string) => RunKeys };

/** Sizes of the measurements (bench/run.mjs). */
export interface Sizes {
  seq: number;
  seqWarm: number;
  seqSlow: number;
  seqBlocks: number;
  many: number;
  few: number;
  scaleOut: number;
  redisSeq: number;
  redisBatch: number;
  redisBound: number;
}

/** What every scenario and its helpers share (bench/run.mjs; systems.mjs's soloContext has a part of it). */
export interface Ctx {
  QUICK: boolean;
  MCP: 'stdio' | 'http';
  PROFILE: boolean;
  COMPARE_RUNS: number;
  SLOW_MS: number;
  SCALE_SLOTS: number;
  N: Sizes;
  HTTP_CONCURRENCY: number;
  REPEAT: number;
  T0: number;
  log: (line: string) => void;
  redis: BenchRedis;
  ctl: Redis;
  waiter: Redis;
  redisProc: Proc[];
  noteForeign: (label: string, share: number) => void;
  quiet: (processes?: Proc[]) => Promise<void>;
}

/** One window of many runs at once (batch.mjs). */
export interface Window {
  label: string;
  n: number;
  wallMs: number;
  submitMs?: number;
  runsPerSec: number;
  toolCallsPerSec: number;
  latency: Summary;
  statuses?: Record<string, number>;
  cpuMs: Record<string, number>;
  foreignShare: number;
}

/** A repeated measurement: its best window, with every repetition's figures. */
export interface Measurement extends Window {
  repetitions: Array<{ runsPerSec: number; wallMs: number; p50: number; p99: number; foreignShare: number }>;
}

/** A unit cost (unit-costs.mjs). */
export interface UnitCost {
  label: string;
  n: number;
  cpuMs: number;
  wallMs: number;
}

/** Scenario 1. */
export interface OverheadResults {
  interleaved: { blocks: number; perBlock: number };
  units?: UnitCost[];
  inproc: Summary;
  bare: Summary;
  loop: Summary;
  agentq: Summary;
  slow: { modelMs: number; inproc: Summary; loop: Summary; agentq: Summary };
}

/** Scenario 2, for one number of agent-workers. */
export interface ThroughputResults {
  workers: number;
  bare: Measurement;
  loop: Measurement;
  agentq: Measurement;
  inproc: Measurement;
}

/** A process's memory at the end of scenario 3. */
export interface MemoryRow {
  name: string;
  peak: number;
  rss: number;
  started?: number;
  heap?: { usedMB: number; totalMB: number; liveMB?: number };
}

/** Scenario 3. */
export interface ConcurrencyResults {
  modelMs: number;
  idealMs: number;
  sizes: number[];
  alternated?: boolean;
  inproc: Record<number, Measurement>;
  loop?: Record<number, Measurement>;
  agentq: Record<number, Measurement>;
  config: { agentWorkers: number; agentConcurrency: number; toolConcurrency: number; [key: string]: unknown };
  heapFlags: string;
  memory: MemoryRow[];
  v8Defaults: { agentq: Measurement; memory: MemoryRow[] };
  scaleOut: { slots: number; n: number; runs: Record<number, Measurement> };
}

/** What one process sent Redis over a window (the probes, redis-probe.mjs). */
export interface ProcessCommands {
  name?: string;
  trips: number;
  commands: number;
  byCommand: Record<string, number>;
}

/** What a system asked of Redis over one window (redis-cost.mjs). */
export interface RedisWindow {
  runs: number;
  steps: number;
  serverCommands: number;
  server: Record<string, { calls: number; usec: number }>;
  clientCommands: Record<string, number>;
  trips: number;
  byProcess: Record<string, ProcessCommands>;
  redisCpuMs: number;
  redisReads: number | null;
  redisWrites: number | null;
  bytesIn: number;
  aofBytes: number;
}

/** Redis time per step by top-level command or script (the slow log). */
export interface ScriptCost {
  name: string;
  callsPerStep: number;
  usecPerStep: number;
  usecPerCall: number;
}

/** One system's Redis cost: runs one at a time, then many at once. */
export interface RedisCost {
  sequential: RedisWindow;
  batch: RedisWindow;
  scripts?: ScriptCost[];
}

/** Scenario 4: each system's first measurement, and (`again`) its second. */
export interface RedisResults {
  agentq: RedisCost;
  bare: RedisCost;
  loop?: RedisCost;
  again?: Partial<Record<'agentq' | 'bare' | 'loop', RedisCost>>;
}

/** One system's window with its Redis capped (paired.mjs). */
export interface CappedWindow {
  runsPerSec: number;
  wallMs: number;
  redisUsPerStep: number;
  redisBusy: number;
  statuses?: Record<string, number>;
}

/** Scenario 5: side by side (`pairs`), or (runs before it) one system after another. */
export interface RedisBoundResults {
  skipped?: string;
  cap: number;
  runs: number;
  method?: string;
  pairs?: {
    loop: Array<{ agentq: CappedWindow; loop: CappedWindow }>;
    bare: Array<{ agentq: CappedWindow; bare: CappedWindow }>;
  };
  agentq?: CappedWindow[];
  bare?: CappedWindow[];
  loop?: CappedWindow[];
}

/** The machine and software a run measured (machine-info.mjs). */
export interface MachineInfo {
  nproc: number;
  cpu: string;
  ramGiB: number;
  os: string;
  node: string;
  redis: string;
  redisSetup: string;
  bullmq: string;
  ioredis: string;
  mcpSdk: string;
  openai: string;
  commit: string;
}

/** A full run's results: bench/results/latest.json. */
export interface Results {
  quick: boolean;
  startedAt: string;
  durationS?: number;
  machine: MachineInfo;
  config: {
    repeat: number;
    serviceNodeOptions?: string | null;
    heapFlags?: string;
    rounds: number;
    fanout: number;
    steps: number;
    toolCallsPerRun: number;
    mcpTransport: string;
    sizes?: Sizes;
    httpConcurrency?: number;
    slowModelMs?: number;
  };
  overhead?: OverheadResults;
  throughput?: ThroughputResults[];
  concurrency?: ConcurrencyResults;
  redis?: RedisResults;
  redisBound?: RedisBoundResults;
  foreign?: Array<{ label: string; share: number }>;
  derived?: Derived;
}

/** A target judged on a run's figures. */
export interface Target {
  name: string;
  value: string;
  ok: boolean;
}

/** Per-step Redis figures of one system in one mode (derive.mjs). */
export interface RedisPerStep {
  commands: number;
  trips: number;
  cpuUs: number;
  bytesIn: number;
  aofBytes: number;
  cpuWindows: number[];
}

/** A system's capped windows summed up (derive.mjs). */
export interface CappedSummary {
  runsPerSec: number;
  redisUsPerStep: number;
  windows: CappedWindow[];
}

/** agentq against a baseline over capped windows: the means of the windows' ratios. */
export interface CappedRatios {
  runsPerSec: number;
  redisUsPerStep: number;
  windows: number[];
}

/** The figures derived from a run's results, and the targets judged on them (derive.mjs). */
export interface Derived {
  targets: Target[];
  overheadPerStep?: { agentq: number; bare: number; ratio: number };
  overheadPerStepP99?: { agentq: number; bare: number };
  slowAdded?: { perStepMs: number; share: number; shareFrom0ms: number };
  loopPerStep?: number;
  split?: { workers: number; agentq: number };
  throughput?: Array<{ ratio: number; ceiling: number }>;
  concurrencyRatio?: number;
  redis?: Record<'sequential' | 'batch', { agentq: RedisPerStep; bare: RedisPerStep; loop?: RedisPerStep }>;
  redisBound?: {
    agentq: CappedSummary;
    bare: CappedSummary;
    loop: CappedSummary;
    vsLoop?: CappedRatios;
    vsBare?: CappedRatios;
  };
}

/** BENCH_COMPARE's results: this checkout's agentq against another's (scenarios/compare.mjs). */
export interface CompareResults {
  startedAt: string;
  roots: { this: string; other: string };
  commits: { this: string; other: string };
  steps: number;
  mcpTransport: string;
  blocks: number;
  perBlock: number;
  latency: Record<'inproc' | 'this' | 'other', Summary>;
  /** Each checkout's Redis cost, measured twice (this, other, other, this). */
  redis: Record<'this' | 'other', RedisCost[]>;
  times: Record<'inproc' | 'this' | 'other', number[]>;
  foreign?: Array<{ label: string; share: number }>;
}

/** The part of Ctx that measuring runs needs: what systems.mjs's soloContext gives outside bench/run.mjs. */
export type RunCtx = Pick<
  Ctx,
  'ctl' | 'waiter' | 'redis' | 'redisProc' | 'log' | 'MCP' | 'REPEAT' | 'HTTP_CONCURRENCY' | 'quiet' | 'noteForeign'
>;

/** A run's status and its times (ms since the epoch) as the system stored them; `completed` NaN until it ends. */
export interface RunTimes {
  status: string;
  created: number;
  completed: number;
}

/** A system measured one run at a time (interleaved.mjs). */
export interface System {
  key: string;
  label: string;
  procs: Proc[];
  once: () => Promise<unknown>;
  /** The same with the slow model. */
  slow?: () => Promise<unknown>;
}

/** What a probed process writes on SIGUSR2 (redis-probe.mjs). */
export interface Probe {
  pid: number;
  at: number;
  memory: NodeJS.MemoryUsage;
  afterGc?: NodeJS.MemoryUsage;
  commands: Record<string, number>;
  trips: number;
  scripts?: Record<string, string>;
}

/** `INFO commandstats` as { name: { calls, usec } }. */
export type CommandStats = Record<string, { calls: number; usec: number }>;

/** A connection to one Redis or to a Cluster (bench:cluster starts agentq on one). */
export type Client = import('ioredis').Redis | import('ioredis').Cluster;
