import type {
  ActionItem,
  ActionResponse,
  ChatMessage,
  InboxItem,
  Run,
  RunStatus,
  Step,
  StepToolCall,
  Tool,
  Usage,
} from '@agentq/client';

// The public API as the inspector reads it. Every piece of data comes from the same /v1 endpoints a script uses
// (with the session cookie in place of the bearer key); only the login itself is the inspector's own (/ui/*).

export type { ActionItem, ActionResponse, ChatMessage, InboxItem, RunStatus, Tool };

/** Usage, with its cost once the model's price is known. */
export type UsageView = Usage & { cost_usd?: number };

/** The run object, with the fields it echoes of its request where the service sends them. */
export interface RunView extends Omit<Run, 'usage' | 'usage_total' | 'stop_reason' | 'agent'> {
  stop_reason: string | null;
  usage: UsageView;
  usage_total: UsageView;
  agent?: { name: string; version: number } | null;
  input?: string | null;
  messages_count?: number;
  instructions?: string | null;
  tools?: string[] | null;
  max_total_tokens?: number | null;
  max_cost_usd?: number | null;
  timeout_ms?: number | null;
  on_budget_exhausted?: string | null;
  subagents?: { enabled?: boolean; max_nesting?: number; max_batch?: number } | null;
  forked_from?: { run_id: string; step: number } | null;
  thread_id?: string | null;
}

/** A tool call of a step, with its wall times where the service sends them. */
export interface CallView extends Omit<StepToolCall, 'status'> {
  status: string;
  started_at?: string | null;
  completed_at?: string | null;
}

/** A model step, with its attempts and an end that a step still in flight (or cut off) may lack. */
export interface StepView extends Omit<Step, 'status' | 'tool_calls' | 'completed_at' | 'usage'> {
  status: string;
  completed_at: string | null;
  usage: Step['usage'] & { cost_usd?: number };
  attempts?: number;
  tool_calls: CallView[];
}

export interface RunPage {
  data: RunView[];
  next: string | null;
}

/** What `GET /ui/session` says: whether a key is needed, who is signed in, and the CSRF token of the login. */
export interface SessionInfo {
  keys_required: boolean;
  signed_in: boolean;
  api: boolean;
  dashboard: boolean;
  csrf_token: string | null;
}

/** An error answer of the API, in the contract's shape. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let csrfToken: string | null = null;
const unauthorizedListeners = new Set<() => void>();

/** Called when a request is refused for want of a login (the session expired or was ended elsewhere). */
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

async function call<T>(
  method: string,
  path: string,
  opts: { body?: unknown; query?: Record<string, string | number | boolean | undefined> } = {},
): Promise<T> {
  const url = new URL(path, window.location.origin);
  for (const [k, v] of Object.entries(opts.query ?? {}))
    if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  const res = await fetch(url, {
    method,
    headers,
    credentials: 'same-origin',
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!res.ok) {
    const err = (json as { error?: { code?: string; message?: string } } | null)?.error;
    if (res.status === 401 && !path.startsWith('/ui/')) for (const l of unauthorizedListeners) l();
    throw new ApiError(res.status, err?.code ?? 'http_error', err?.message ?? `${res.status} ${res.statusText}`);
  }
  return json as T;
}

const runPath = (id: string, sub = '') => `/v1/runs/${encodeURIComponent(id)}${sub}`;

export const api = {
  async session(): Promise<SessionInfo> {
    const s = await call<SessionInfo>('GET', '/ui/session');
    csrfToken = s.csrf_token;
    return s;
  },
  async login(key: string): Promise<SessionInfo> {
    const s = await call<SessionInfo>('POST', '/ui/login', { body: { key } });
    csrfToken = s.csrf_token;
    return s;
  },
  async logout(): Promise<void> {
    await call('POST', '/ui/logout');
    csrfToken = null;
  },
  listRuns(q: { status?: string; limit: number; after?: string; q?: string; top_level?: boolean }) {
    return call<RunPage>('GET', '/v1/runs', { query: { ...q, top_level: q.top_level ? 'true' : undefined } });
  },
  runCounts(q: { top_level?: boolean }) {
    return call<{ counts: Record<string, number>; runs: number; complete: boolean }>('GET', '/v1/runs/counts', {
      query: { top_level: q.top_level ? 'true' : undefined },
    });
  },
  run: (id: string) => call<RunView>('GET', runPath(id)),
  steps: async (id: string) => (await call<{ data: StepView[] }>('GET', runPath(id, '/steps'))).data,
  messages: async (id: string) => (await call<{ data: ChatMessage[] }>('GET', runPath(id, '/messages'))).data,
  children: async (id: string) => (await call<{ data: RunView[] }>('GET', runPath(id, '/children'))).data,
  tools: async () => (await call<{ data: Tool[] }>('GET', '/v1/tools')).data,
  cancel: (id: string) => call<RunView>('POST', runPath(id, '/cancel')),
  respond: (runId: string, responses: ActionResponse[]) =>
    call<RunView>('POST', runPath(runId, '/actions'), { body: { responses } }),
  actions: (q: { status?: 'pending' | 'resolved'; limit: number; after?: string }) =>
    call<{ data: InboxItem[]; next: string | null }>('GET', '/v1/actions', { query: q }),
  /** The URL of a run's event stream (the browser sends the session cookie with it). */
  eventsUrl: (id: string) => runPath(id, '/events'),
};
