import { z } from 'zod';
import { chatMessageSchema, type AssistantMessage } from './message.js';
import type { Usage } from './usage.js';
import { BUILTIN_TOOL_NAMES } from '../builtin-tools.js';
import { modelSettingsSchema, type ModelSettings } from './model-settings.js';
import { toolLimitsSchema, type ToolLimits } from '../tool-limits.js';

/** `requires_action`: something of the run or of its sub-runs waits for an answer (see actions/). */
export const RUN_STATUSES = [
  'queued',
  'running',
  'requires_action',
  'completed',
  'failed',
  'cancelled',
  'incomplete',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled', 'incomplete']);
export const isTerminal = (s: RunStatus) => TERMINAL_STATUSES.has(s);

/** `approval_timeout`: a request for an answer expired under `on_timeout: "stop"`. */
export const STOP_REASONS = [
  'stop',
  'max_depth',
  'max_total_tokens',
  'max_tokens_per_day',
  'max_cost_usd',
  'timeout',
  'approval_timeout',
  'cancelled',
  'error',
] as const;
export type StopReason = (typeof STOP_REASONS)[number];
export type BudgetName = 'max_depth' | 'max_total_tokens' | 'max_tokens_per_day' | 'max_cost_usd' | 'timeout';

/** `metadata` is echoed with every run (lists too), so it is kept small. */
export const METADATA_MAX_BYTES = 16 * 1024;
/**
 * The largest `response_format` and `client_tools` (as JSON, the latter all together): both are
 * kept with the run and read with it by every request about the run, and sent with every step.
 */
export const RESPONSE_FORMAT_MAX_BYTES = 64 * 1024;
export const CLIENT_TOOLS_MAX_BYTES = 256 * 1024;
const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), 'utf8');

/** How many entries `tools` may list, and how long each may be. */
export const MAX_TOOLS_ENTRIES = 500;
export const MAX_TOOL_ENTRY_CHARS = 200;
/**
 * How many characters the globs of `tools` (its entries with `*` or `?`) may hold together.
 * Checking a tool name costs at most its length times this many character steps (exact names
 * cost one set lookup), so a run's allowlist costs little per model step and tool call.
 */
export const MAX_TOOL_GLOB_CHARS = 256;
const isGlob = (entry: string) => entry.includes('*') || entry.includes('?');

const toolGlob = z
  .string()
  .min(1)
  .max(MAX_TOOL_ENTRY_CHARS)
  .regex(/^[A-Za-z0-9_*?.-]+$/, 'a tool name or glob: letters, digits, _ - . and the wildcards * ?');

const toolsSchema = z
  .array(toolGlob)
  .max(MAX_TOOLS_ENTRIES)
  .refine((entries) => entries.filter(isGlob).reduce((n, g) => n + g.length, 0) <= MAX_TOOL_GLOB_CHARS, {
    message:
      `the globs (entries with * or ?) may hold ${MAX_TOOL_GLOB_CHARS} characters together; ` +
      `list tools by exact name instead`,
  });

const responseFormatSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.looseObject({
      name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, '1-64 of letters, digits, _ and -'),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
      description: z.string().optional(),
    }),
  }),
]);
export type ResponseFormat = z.infer<typeof responseFormatSchema>;

/** The longest a request for an answer may wait (`approval.timeout_ms`). */
export const MAX_ACTION_TIMEOUT_MS = 30 * 24 * 3600 * 1000;
/** How many client tools a run may offer. */
export const MAX_CLIENT_TOOLS = 64;

/** Which tool calls need a yes before they run, and what an unanswered request comes to. */
const approvalSchema = z
  .strictObject({
    tools: toolsSchema.optional(),
    destructive: z.boolean().default(false),
    timeout_ms: z.number().int().min(1).max(MAX_ACTION_TIMEOUT_MS).optional(),
    on_timeout: z.enum(['reject', 'stop']).default('reject'),
  })
  .refine((a) => a.destructive || (a.tools?.length ?? 0) > 0, {
    message: 'name the tools that need approval ("tools") or set "destructive": true',
  });
export type ApprovalPolicy = z.infer<typeof approvalSchema>;

/**
 * A tool the caller runs itself, in OpenAI's function-tool format. Its name may not contain
 * `__` (the separator of MCP tools' names) nor be a built-in tool's.
 */
const clientToolSchema = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    name: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, '1-64 of letters, digits, _ and -')
      .refine((n) => !n.includes('__'), 'may not contain "__" (MCP tools are named <server>__<tool>)')
      .refine((n) => !BUILTIN_TOOL_NAMES.has(n), 'is the name of a built-in tool'),
    description: z.string().max(1024).optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type ClientTool = z.infer<typeof clientToolSchema>;

const clientToolsSchema = z
  .array(clientToolSchema)
  .min(1)
  .max(MAX_CLIENT_TOOLS)
  .refine(
    (tools) => new Set(tools.map((t) => t.function.name)).size === tools.length,
    'two client tools have the same name',
  );

/**
 * `name` or `name@<version>` of a saved agent (see schemas/agent.ts): what `agent` of a run and
 * the entries of `subagents.agents` take.
 */
export const agentRefSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,63}(@[1-9][0-9]{0,8})?$/,
    'an agent name ([a-z0-9][a-z0-9_-]{0,63}), optionally with @<version>, e.g. "analyst" or "analyst@3"',
  );

/** How many saved agents a run may let its model call as sub-agents (`subagents.agents`). */
export const MAX_SUBAGENT_TYPES = 32;

const subagentsSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    max_nesting: z.number().int().min(1).max(10).default(3),
    max_batch: z.number().int().min(1).max(100).default(10),
    /** Saved agents the model may start as sub-agents (`agent_query {"agent"}`). */
    agents: z
      .array(agentRefSchema)
      .max(MAX_SUBAGENT_TYPES)
      .refine((a) => new Set(a.map((r) => r.split('@')[0])).size === a.length, 'an agent is listed twice')
      .optional(),
  })
  .refine((s) => s.enabled || !s.agents?.length, {
    message: 'set "enabled": true to let the run call the agents listed in "agents"',
    path: ['enabled'],
  });

const contextDocSchema = z.object({ name: z.string().min(1).max(256), text: z.string() });

/** The body of `POST /v1/runs`. */
export const createRunBodySchema = z
  .strictObject({
    /** A saved agent whose fields the run takes (see runs/agent-runs.ts for the precedence). */
    agent: agentRefSchema.optional(),
    input: z.string().min(1, 'must not be empty').optional(),
    messages: z.array(chatMessageSchema).min(1, 'must hold at least one message').max(10_000).optional(),
    instructions: z.string().optional(),
    model: z.string().min(1).max(256).optional(),
    /** Sampling and output settings passed to the provider (see model-settings.ts). */
    model_settings: modelSettingsSchema.optional(),
    /** Models a step moves on to, in order, when its model keeps failing (retries spent). */
    fallback_models: z.array(z.string().min(1).max(256)).min(1).max(5).optional(),
    tools: toolsSchema.optional(),
    /** At most n calls of the matching tools in the run; calls past it are error results (see tool-limits.ts). */
    tool_limits: toolLimitsSchema.optional(),
    max_depth: z.number().int().min(1).max(100).default(10),
    max_total_tokens: z.number().int().min(1).optional(),
    /** A budget in US dollars over the run tree, counted where model prices are known (PROVIDERS_CONFIG). */
    max_cost_usd: z.number().positive().max(1_000_000).optional(),
    timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 3600 * 1000)
      .optional(),
    on_budget_exhausted: z.enum(['final_answer', 'stop']).default('final_answer'),
    subagents: subagentsSchema.optional(),
    /** Answers that fail response_format's schema are sent back to the model this many times. */
    structured_output_retries: z.number().int().min(0).max(5).optional(),
    response_format: responseFormatSchema
      .refine(
        (f) => jsonBytes(f) <= RESPONSE_FORMAT_MAX_BYTES,
        `must be at most ${RESPONSE_FORMAT_MAX_BYTES} bytes as JSON`,
      )
      .optional(),
    context: z.union([z.string(), z.array(contextDocSchema).min(1).max(1000)]).optional(),
    approval: approvalSchema.optional(),
    client_tools: clientToolsSchema
      .refine(
        (t) => jsonBytes(t) <= CLIENT_TOOLS_MAX_BYTES,
        `must be at most ${CLIENT_TOOLS_MAX_BYTES} bytes as JSON, all together`,
      )
      .optional(),
    human_input: z.boolean().default(false),
    webhook: z.strictObject({ url: z.url({ protocol: /^https?$/ }), secret: z.string().min(1).optional() }).optional(),
    metadata: z
      .record(z.string(), z.unknown())
      .refine((m) => jsonBytes(m) <= METADATA_MAX_BYTES, `must be at most ${METADATA_MAX_BYTES} bytes as JSON`)
      .optional(),
  })
  .superRefine((body, ctx) => {
    if (body.input === undefined && body.messages === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['input'],
        message: 'give either "input" (a string) or "messages" (OpenAI chat messages)',
      });
    }
    if (body.input !== undefined && body.messages !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['messages'], message: 'give "input" or "messages", not both' });
    }
  });
export type CreateRunBody = z.infer<typeof createRunBodySchema>;

/** What a worker needs to know of a run: fixed at creation, stored once. */
export interface RunSpec {
  model: string;
  /** Passed to the provider with every model call (sub-runs inherit them). */
  model_settings?: ModelSettings;
  /** Models a step moves on to when its model keeps failing (sub-runs inherit them). */
  fallback_models?: string[];
  instructions?: string;
  tools?: string[];
  /** Calls past these are error results the model sees (sub-runs inherit them, each counting its own). */
  tool_limits?: ToolLimits;
  max_depth: number;
  max_total_tokens?: number;
  /**
   * On a sub-run of a saved agent with its own max_total_tokens: a token budget over this run and
   * its sub-runs (its usage_total), beside the tree's (max_total_tokens).
   */
  subtree_max_total_tokens?: number;
  /** A budget in US dollars over the run tree (its usage_total's cost_usd). */
  max_cost_usd?: number;
  /** As subtree_max_total_tokens, for a saved agent's own max_cost_usd. */
  subtree_max_cost_usd?: number;
  timeout_ms?: number;
  on_budget_exhausted: 'final_answer' | 'stop';
  subagents?: { enabled: boolean; max_nesting: number; max_batch: number; agents?: string[] };
  /** The saved agent the run runs as (by `agent`, or a sub-run by `agent_query {"agent"}`). */
  agent?: AgentRef;
  /** The agents of `subagents.agents` as the run was created: see SubagentType. */
  subagent_types?: SubagentType[];
  response_format?: ResponseFormat;
  /** How many times an answer that fails response_format is sent back to be repaired; unset: 1. */
  structured_output_retries?: number;
  webhook?: { url: string; secret?: string };
  /** Which tool calls wait for a yes (inherited by sub-runs). */
  approval?: ApprovalPolicy;
  /** Tools the caller runs itself (a root run's only). */
  client_tools?: ClientTool[];
  /** Offers the built-in ask_human (inherited by sub-runs). */
  human_input?: boolean;
  /** On a sub-run: its root has a webhook (which `run.requires_action` goes to). */
  root_webhook?: boolean;
  metadata: Record<string, unknown>;
  has_context?: boolean;
  /** Absolute deadline (ms since epoch) from timeout_ms; sub-runs inherit their root's. */
  deadline_at?: number;
  /** On a sub-run: the parent's tool call that started it, whose job it wakes when it ends. */
  parent_call?: { depth: number; index: number };
  /** Run ids from the root down to the parent (empty for a root run). */
  ancestors: string[];
  /** Nesting level: 0 for a root run. */
  nesting: number;
}

/** A saved agent at one of its versions. */
export interface AgentRef {
  name: string;
  version: number;
}

/**
 * An agent a run may start as a sub-agent, fixed when the run was created: its version then and
 * its description (which the model reads). `version` is null for an agent not saved then: a
 * call to it takes its latest version at the time, or is an error result while there is none.
 */
export interface SubagentType {
  name: string;
  version: number | null;
  description: string;
}

/**
 * When a run must end (ms since epoch), or undefined: the absolute deadline set at creation
 * (sub-runs inherit their root's), else `created + timeout_ms` for a spec without one.
 */
export function runDeadline(
  spec: Pick<RunSpec, 'deadline_at' | 'timeout_ms'>,
  createdAtMs: number,
): number | undefined {
  return spec.deadline_at ?? (spec.timeout_ms !== undefined ? createdAtMs + spec.timeout_ms : undefined);
}

/** The run object of the public API. */
export interface RunObject {
  id: string;
  object: 'run';
  status: RunStatus;
  stop_reason: StopReason | null;
  model: string;
  depth: number;
  max_depth: number;
  parent_run_id: string | null;
  root_run_id: string;
  output: AssistantMessage | null;
  output_parsed: unknown;
  error: { code: string; message: string } | null;
  usage: Usage;
  usage_total: Usage;
  /** The saved agent the run runs as, null for none. */
  agent: AgentRef | null;
  metadata: Record<string, unknown>;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  /** While the status is `requires_action`: every pending item of the run and its sub-runs. */
  required_action?: { items: ActionItemView[] };
}

/** A request for an answer as the API shows it (`required_action.items`, `GET /v1/actions`). */
export interface ActionItemView {
  id: string;
  type: 'approval' | 'client_tool' | 'input';
  run_id: string;
  tool_call_id: string;
  name: string;
  arguments: string;
  question?: string;
  choices?: string[] | null;
  created_at: string;
  expires_at: string | null;
  /** With ACTION_LINK_SECRET: a link that answers this item without an API key. */
  respond_url?: string;
}

export { responseFormatSchema, chatMessageSchema };
