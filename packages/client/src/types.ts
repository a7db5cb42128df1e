// The wire types of the agentq HTTP API (v1). The service may add fields: objects here list
// what the contract guarantees, and values keep whatever else the service sends.

export type RunStatus = 'queued' | 'running' | 'requires_action' | 'completed' | 'failed' | 'cancelled' | 'incomplete';
export type TerminalStatus = 'completed' | 'failed' | 'cancelled' | 'incomplete';
export type StopReason =
  | 'stop'
  | 'max_depth'
  | 'max_total_tokens'
  | 'max_tokens_per_day'
  | 'max_cost_usd'
  | 'timeout'
  | 'approval_timeout'
  | 'cancelled'
  | 'error';

export const TERMINAL_STATUSES: readonly TerminalStatus[] = ['completed', 'failed', 'cancelled', 'incomplete'];

/** True once a run can change no more. */
export const isTerminalStatus = (s: RunStatus): s is TerminalStatus =>
  (TERMINAL_STATUSES as readonly string[]).includes(s);

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  model_calls: number;
  tool_calls: number;
  /** US dollars, once a step of a model whose price is known (PROVIDERS_CONFIG) is counted. */
  cost_usd?: number;
}

/** A function call the assistant asked for, in OpenAI chat format. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

type Content = string | Array<{ type: string; [k: string]: unknown }>;

/** An OpenAI chat message. */
export type ChatMessage =
  | { role: 'system' | 'developer' | 'user'; content: Content; name?: string; [k: string]: unknown }
  | { role: 'assistant'; content?: Content | null; tool_calls?: ToolCall[]; name?: string; [k: string]: unknown }
  | { role: 'tool'; content: Content; tool_call_id: string; [k: string]: unknown };

/** The run object. */
export interface Run {
  id: string;
  object: 'run';
  status: RunStatus;
  stop_reason: StopReason | null;
  model: string;
  /** Tool rounds done so far. */
  depth: number;
  max_depth: number;
  parent_run_id: string | null;
  root_run_id: string;
  /** The final assistant message. */
  output: { role: 'assistant'; content: string | null; refusal?: string | null } | null;
  /** The parsed answer when the run asked for a json_schema response format. */
  output_parsed: unknown;
  error: { code: string; message: string } | null;
  usage: Usage;
  /** This run plus all its sub-runs. */
  usage_total: Usage;
  /** The saved agent the run runs as, at its version; null for none. */
  agent: { name: string; version: number } | null;
  metadata: Record<string, unknown>;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  /** While the status is `requires_action`: every pending request of the run and of its sub-runs. */
  required_action?: { items: ActionItem[] };
}

/** What a request waits for: a yes to a tool call, a client tool's output, an answer to a question. */
export type ActionType = 'approval' | 'client_tool' | 'input';

/** A request for an answer (`required_action.items`, `action.required`, the inbox). */
export interface ActionItem {
  /** `act_<run id without "run_">_<depth>_<index>`: one tool call of one step of one run. */
  id: string;
  type: ActionType;
  /** The run that waits (a sub-run's items show on its root too). */
  run_id: string;
  tool_call_id: string;
  /** The tool called (`ask_human` for a question). */
  name: string;
  /** The call's arguments as JSON text: the ones an approval runs unless edited. */
  arguments: string;
  /** For `input`: what the model asks. */
  question?: string;
  /** For `input`: the answers it offers, or null for free text. */
  choices?: string[] | null;
  created_at: string;
  /** When an unanswered request expires, or null for never (but the run's own deadline). */
  expires_at: string | null;
  /** With the server's ACTION_LINK_SECRET: a signed link that answers this one item without an API key. */
  respond_url?: string;
}

/** Yes to a call, with the arguments it was requested with. */
export interface ApproveResponse {
  id: string;
  approve: true;
}
/** Yes to a call, run with other arguments (JSON text; the API checks them against the tool's input schema). */
export interface ApproveEditedResponse {
  id: string;
  approve: true;
  arguments: string;
}
/** No to a call: it never runs; the model is told `The user rejected this call: <reason>`. */
export interface RejectResponse {
  id: string;
  approve: false;
  reason?: string;
}
/** A client tool's output, given to the model as the tool message. */
export interface ToolOutputResponse {
  id: string;
  output: string;
}
/** The answer to a question (`ask_human`). */
export interface AnswerResponse {
  id: string;
  answer: string;
}
/**
 * One response of `POST /v1/runs/:id/actions`: an approval takes `approve`, a client tool `output`, a
 * question `answer`.
 */
export type ActionResponse =
  | ApproveResponse
  | ApproveEditedResponse
  | RejectResponse
  | ToolOutputResponse
  | AnswerResponse;

/** The longest output, answer or edited arguments one response may carry (characters). */
export const MAX_RESPONSE_CHARS = 1_000_000;
/** The longest reason of a rejection (characters). */
export const MAX_REASON_CHARS = 4000;

/** How a request was settled. */
export type ActionDecision = 'approved' | 'rejected' | 'answered' | 'expired' | 'cancelled';

/** A request as the inbox lists it: pending, or resolved with its decision. */
export interface InboxItem extends ActionItem {
  status: 'pending' | 'resolved';
  /** Once resolved. */
  decision?: ActionDecision;
  resolved_at?: string;
}

/** `GET /v1/actions`: a page of a tenant's requests across its runs, newest first. */
export interface ActionList {
  data: InboxItem[];
  /** The `after` of the next page, or null on the last. */
  next: string | null;
}

export interface ListActionsParams {
  /** Only pending or only resolved requests; omit for both. */
  status?: 'pending' | 'resolved';
  /** Page size, 1..100. @defaultValue 20 */
  limit?: number;
  /** A request id: the `next` of the previous page. */
  after?: string;
}

/** The body of `POST /v1/runs`: give `input` or `messages`. */
export interface CreateRunRequest {
  /** A saved agent (`name` or `name@3`) whose fields the run takes; fields given here win. */
  agent?: string;
  input?: string;
  messages?: ChatMessage[];
  instructions?: string;
  model?: string;
  /** Sampling and output settings passed to the provider with every model call. */
  model_settings?: ModelSettings;
  /** Models a step moves on to, in order, once it has spent its tries on its model (up to 5). */
  fallback_models?: string[];
  /** Allowlist of tool names or globs (`crm__*`). */
  tools?: string[];
  /** `{"<tool name or glob>": n}`: calls past n in the run are error results the model sees, not made. */
  tool_limits?: Record<string, number>;
  /** Tool rounds allowed, 1..100. @defaultValue 10 */
  max_depth?: number;
  max_total_tokens?: number;
  /** A budget in US dollars over the run tree, counted where model prices are known. */
  max_cost_usd?: number;
  /** Times an answer that fails `response_format`'s schema is sent back to the model, with why. @defaultValue 1 */
  structured_output_retries?: number;
  timeout_ms?: number;
  /** @defaultValue "final_answer" */
  on_budget_exhausted?: 'final_answer' | 'stop';
  /** `agents`: saved agents the model may start as sub-agents (`agent_query {"agent"}`). */
  subagents?: { enabled?: boolean; max_nesting?: number; max_batch?: number; agents?: string[] };
  response_format?:
    | { type: 'text' }
    | { type: 'json_object' }
    | {
        type: 'json_schema';
        json_schema: { name: string; schema?: Record<string, unknown>; strict?: boolean | null; description?: string };
      };
  context?: string | Array<{ name: string; text: string }>;
  webhook?: { url: string; secret?: string };
  /** Which tool calls wait for a yes before they run (sub-runs inherit it). */
  approval?: ApprovalPolicy;
  /** Tools the caller runs itself (OpenAI function-tool format); offered to the root run only. */
  client_tools?: ClientTool[];
  /** Offers the model the built-in `ask_human {question, choices?}`. */
  human_input?: boolean;
  metadata?: Record<string, unknown>;
}

/** A run's model settings (OpenAI chat-completions names); `parallel_tool_calls` is sent only with tools. */
export interface ModelSettings {
  /** 0..2 */
  temperature?: number;
  /** 0..1 */
  top_p?: number;
  max_tokens?: number;
  reasoning_effort?: 'none' | 'minimal' | 'low' | 'medium' | 'high';
  parallel_tool_calls?: boolean;
  seed?: number;
  /** Up to 4 sequences. */
  stop?: string | string[];
  /** -2..2 */
  presence_penalty?: number;
  /** -2..2 */
  frequency_penalty?: number;
}

/** Which tool calls need a yes, and what an unanswered request comes to. Give `tools`, `destructive: true` or both. */
export interface ApprovalPolicy {
  /** Tool names or globs (`crm__update_*`). */
  tools?: string[];
  /** Every MCP tool not annotated `readOnlyHint: true`. @defaultValue false */
  destructive?: boolean;
  /** How long one request may wait; omit for no limit but the run's deadline. */
  timeout_ms?: number;
  /** At expiry: tell the model no one approved (`reject`) or end the run incomplete (`stop`). @defaultValue "reject" */
  on_timeout?: 'reject' | 'stop';
}

/** A tool the caller runs itself: each call waits for its output (`submitToolOutput`). */
export interface ClientTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export interface RunList {
  data: Run[];
  /** The `after` of the next page, or null on the last. */
  next: string | null;
}

export interface ListRunsParams {
  status?: RunStatus;
  /** Page size, 1..100. @defaultValue 20 */
  limit?: number;
  after?: string;
}

export interface StepToolCall {
  id: string;
  name: string;
  arguments: string;
  /** `requires_action`: the call waits for an answer (see `approval`). */
  status: 'queued' | 'requires_action' | 'running' | 'completed' | 'failed';
  output: string | null;
  is_error: boolean;
  /** How the call ended once it has: `ok`, `tool_error`, `timeout`, `refused`, `unknown_outcome`, … */
  outcome?: string;
  attempts: number;
  duration_ms: number | null;
  subrun_ids?: string[];
  /** For a call that waited for an answer: the decision, who made it (a tenant's hash, `link` or `agentq`) and when. */
  approval?: {
    id: string;
    type: ActionType;
    decision: 'pending' | ActionDecision;
    reason?: string;
    /** Edited arguments the call ran with. */
    arguments?: string;
    by?: string;
    at?: string;
  };
}

/** One model step and its tool calls. */
export interface Step {
  depth: number;
  status: 'completed';
  model: string;
  /** With `cost_usd` when the price of the model is known. */
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; cost_usd?: number };
  started_at: string;
  completed_at: string;
  /** A final answer that failed the run's response_format (the run repairs it, or fails). */
  error?: { code: string; message: string };
  /** A step that repairs such an answer: which repair (1, 2, …). */
  repair?: number;
  tool_calls: StepToolCall[];
}

export interface WebhookDelivery {
  webhook_id: string;
  type: string;
  attempt: number;
  url: string;
  at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  success: boolean;
}

export interface Tool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  server: string;
}

/** The `data` of each event type. */
export interface RunEventData {
  'run.queued': { run_id: string };
  'run.started': { run_id: string };
  'step.started': { depth: number; model: string; tools_disabled: boolean };
  'message.delta': { depth: number; text: string };
  'step.completed': {
    depth: number;
    usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
    finish_reason: string | null;
    content: string | null;
    tool_calls: Array<{ id: string; name: string; arguments: string }>;
  };
  'tool.started': { depth: number; index: number; tool_call_id: string; name: string; attempt: number };
  'tool.completed': {
    depth: number;
    index: number;
    tool_call_id: string;
    name: string;
    is_error: boolean;
    duration_ms: number;
    /** What the call returned, as the model sees it (the first 16 KB). */
    output: string;
    /** True when the service cut `output` short (past 16 KB). */
    truncated?: boolean;
    /** How the call ended: `ok`, `tool_error`, `timeout`, `refused`, `unknown_outcome`, … */
    outcome?: string;
  };
  'subrun.started': { run_id: string; depth: number; tool_call_id: string; index: number };
  'subrun.completed': { run_id: string; status: string; tool_call_id: string; index: number };
  /** Requests a round made: the run waits for them (also on its root's stream). */
  'action.required': { items: ActionItem[] };
  /** A request was decided: answered, or expired or cancelled. */
  'action.resolved': { id: string; decision: ActionDecision };
  'run.completed': { run: Run };
  'run.failed': { run: Run };
  'run.cancelled': { run: Run };
  'run.incomplete': { run: Run };
}

export type RunEventType = keyof RunEventData;

/** What every event's data carries. */
export interface RunEventCommon {
  /** The run the event is about (a sub-run's for `subrun.*`). */
  run_id: string;
  /** When it happened (ISO 8601), kept on replay. */
  at: string;
}

/** One event of a run's stream: `id` resumes the stream after it. */
export type RunEvent = {
  [T in RunEventType]: { id: string; event: T; data: RunEventData[T] & RunEventCommon };
}[RunEventType];

export const TERMINAL_EVENTS: readonly RunEventType[] = [
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.incomplete',
];

/** The body of a webhook POST: a run ended, or (`run.requires_action`) something of its tree started waiting. */
export interface WebhookPayload {
  type: 'run.completed' | 'run.failed' | 'run.cancelled' | 'run.incomplete' | 'run.requires_action';
  timestamp: string;
  data: Run;
}
