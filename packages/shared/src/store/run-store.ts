import type { RedisClient } from '../infra/redis.js';
import { ActionStore } from './actions.js';
import { AgentStore } from './agents.js';
import { RepairRounds } from './repair-rounds.js';
import { RunCosts } from './run-costs.js';
import { ContextStore } from './context-store.js';
import { globalKeys, runKeys } from './keys.js';
import { RunEventLog } from './run-events.js';
import { RunRecords } from './run-records.js';
import { StepsView } from './steps-view.js';
import { ToolCalls } from './tool-calls.js';
import { ToolCatalog } from './tool-catalog.js';
import { Transcript } from './transcript.js';
import { WebhookLog } from './webhook-log.js';

export interface RunStoreOptions {
  /** The connection every part uses; its tenant closes it, not the store. */
  redis: RedisClient;
  prefix: string;
  /** How long a finished run's keys are kept. @defaultValue 604800 (7 days) */
  retentionSeconds?: number;
}

/**
 * Everything agentq keeps in Redis, in parts, each owning one concept and its keys and scripts:
 * run records, transcripts, tool calls, events, the tool catalog, contexts, webhook attempts,
 * requests for an answer, and the `/steps` view over them.
 */
export class RunStore {
  readonly prefix: string;
  readonly retentionSeconds: number;
  readonly runs: RunRecords;
  readonly transcript: Transcript;
  readonly toolCalls: ToolCalls;
  readonly events: RunEventLog;
  readonly catalog: ToolCatalog;
  readonly contexts: ContextStore;
  readonly webhooks: WebhookLog;
  readonly steps: StepsView;
  readonly actions: ActionStore;
  /** Saved agents, per tenant. */
  readonly agents: AgentStore;
  /** Structured-output repair rounds. */
  readonly repairs: RepairRounds;
  /** What runs have spent in money. */
  readonly costs: RunCosts;

  constructor(opts: RunStoreOptions) {
    const { redis, prefix } = opts;
    this.prefix = prefix;
    this.retentionSeconds = opts.retentionSeconds ?? 7 * 24 * 3600;
    this.runs = new RunRecords(redis, prefix, this.retentionSeconds);
    this.transcript = new Transcript(redis, prefix);
    this.toolCalls = new ToolCalls(redis, prefix);
    this.events = new RunEventLog(redis, prefix);
    this.catalog = new ToolCatalog(redis, prefix);
    this.contexts = new ContextStore(redis, prefix);
    this.webhooks = new WebhookLog(redis, prefix, this.retentionSeconds);
    this.actions = new ActionStore(redis, prefix, this.retentionSeconds);
    this.steps = new StepsView(redis, prefix);
    this.agents = new AgentStore(redis, prefix);
    this.repairs = new RepairRounds(redis, prefix);
    this.costs = new RunCosts(redis, prefix);
  }

  keys(runId: string) {
    return runKeys(this.prefix, runId);
  }

  get global() {
    return globalKeys(this.prefix);
  }
}
