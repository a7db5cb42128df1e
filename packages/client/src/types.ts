// The wire types of the agentq HTTP API (v1). The service may add fields: objects here list
// what the contract guarantees, and values keep whatever else the service sends.

export type RunStatus = 'queued' | 'running' | 'requires_action' | 'completed' | 'failed' | 'cancelled' | 'incomplete';
export type TerminalStatus = 'completed' | 'failed' | 'cancelled' | 'incomplete';
export type StopReason = 'stop' | 'max_depth' | 'max_total_tokens' | 'timeout' | 'approval_timeout' | 'cancelled' | 'error';

export const TERMINAL_STATUSES: readonly TerminalStatus[] = ['completed', 'failed', 'cancelled', 'incomplete'];

/** True once a run can change no more. */
export const isTerminalStatus = (s: RunStatus): s is TerminalStatus => (TERMINAL_STATUSES as readonly string[]).includes(s);

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  model_calls: number;
  tool_calls: number;
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
  metadata: Record<string, unknown>;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
}

/** The body of `POST /v1/runs`: give `input` or `messages`. */
export interface CreateRunRequest {
  input?: string;
  messages?: ChatMessage[];
  instructions?: string;
  model?: string;
  /** Allowlist of tool names or globs (`crm__*`). */
  tools?: string[];
  /** Tool rounds allowed, 1..100. @defaultValue 10 */
  max_depth?: number;
  max_total_tokens?: number;
  timeout_ms?: number;
  /** @defaultValue "final_answer" */
  on_budget_exhausted?: 'final_answer' | 'stop';
  subagents?: { enabled?: boolean; max_nesting?: number; max_batch?: number };
  response_format?: { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; json_schema: { name: string; schema?: Record<string, unknown>; strict?: boolean | null; description?: string } };
  context?: string | Array<{ name: string; text: string }>;
  webhook?: { url: string; secret?: string };
  metadata?: Record<string, unknown>;
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
  status: 'queued' | 'running' | 'completed' | 'failed';
  output: string | null;
  is_error: boolean;
  /** How the call ended once it has: `ok`, `tool_error`, `timeout`, `refused`, `unknown_outcome`, … */
  outcome?: string;
  attempts: number;
  duration_ms: number | null;
  subrun_ids?: string[];
}

/** One model step and its tool calls. */
export interface Step {
  depth: number;
  status: 'completed';
  model: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  started_at: string;
  completed_at: string;
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
export type RunEvent = { [T in RunEventType]: { id: string; event: T; data: RunEventData[T] & RunEventCommon } }[RunEventType];

export const TERMINAL_EVENTS: readonly RunEventType[] = ['run.completed', 'run.failed', 'run.cancelled', 'run.incomplete'];

/** The body of a webhook POST. */
export interface WebhookPayload {
  type: 'run.completed' | 'run.failed' | 'run.cancelled' | 'run.incomplete';
  timestamp: string;
  data: Run;
}
