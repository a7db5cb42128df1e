import { AgentsApi } from './agents.js';
import { AgentqApiError, AgentqTimeoutError } from './errors.js';
import { isTransient, poll, sleep } from './poll.js';
import { parseSse } from './sse.js';
import {
  isTerminalStatus,
  TERMINAL_EVENTS,
  type ActionList,
  type ActionResponse,
  type ChatMessage,
  type CreateRunRequest,
  type InboxItem,
  type ListActionsParams,
  type ListRunsParams,
  type Run,
  type RunEvent,
  type RunList,
  type Step,
  type Tool,
  type WebhookDelivery,
} from './types.js';

export interface AgentqClientOptions {
  /** The API's base URL, such as `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** One of the server's API_KEYS; omit when the server has none. */
  apiKey?: string;
  /** The fetch to use. @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface WaitForRunOptions extends RequestOptions {
  /** Give up (AgentqTimeoutError) after this long. @defaultValue 600000 */
  timeoutMs?: number;
  /** First pause between polls; grows 1.5× per poll. @defaultValue 200 */
  pollIntervalMs?: number;
  /** Longest pause between polls. @defaultValue 2000 */
  maxPollIntervalMs?: number;
}

export interface StreamEventsOptions extends RequestOptions {
  /** Start after this event id (what `id` of an event said); omit for the whole history. */
  lastEventId?: string;
  /** Reconnects in a row, without an event between them, before giving up. @defaultValue 10 */
  maxRetries?: number;
  /**
   * First pause before a reconnect (the server's `retry:` overrides it); doubles per failure, at most 5 s.
   * @defaultValue 250
   */
  retryDelayMs?: number;
  /** Called before each reconnect. */
  onReconnect?: (info: { attempt: number; lastEventId: string | undefined; error: unknown }) => void;
}

export interface WaitForReadyOptions extends RequestOptions {
  /**
   * Also wait until every one of these tools is offered (a tool-worker lists its MCP servers' tools once it
   * has connected them).
   */
  tools?: string[];
  /** Give up (AgentqTimeoutError) after this long. @defaultValue 30000 */
  timeoutMs?: number;
  /** First pause between polls; grows 1.5× per poll, up to 1 s. @defaultValue 100 */
  pollIntervalMs?: number;
}

/** A typed client of the agentq HTTP API (v1) on `fetch`. Errors are `AgentqApiError`. */
export class AgentqClient {
  readonly baseUrl: string;
  private readonly apiKey?: string;
  private readonly fetchImpl: typeof fetch;
  private readonly headers: Record<string, string>;
  /** Saved agents: `client.agents.put(name, definition)`, `get`, `list`, `versions`, `delete`. */
  readonly agents: AgentsApi;

  constructor(opts: AgentqClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.apiKey = opts.apiKey;
    this.fetchImpl = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.headers = opts.headers ?? {};
    this.agents = new AgentsApi((method, path, o) => this.request(method, path, o));
  }

  private url(path: string, query?: Record<string, string | number | undefined>): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
    return u.toString();
  }

  private headersFor(extra: Record<string, string> = {}): Headers {
    const h = new Headers({ accept: 'application/json', ...this.headers, ...extra });
    if (this.apiKey) h.set('authorization', `Bearer ${this.apiKey}`);
    return h;
  }

  private async request<T>(
    method: string,
    path: string,
    o: RequestOptions & {
      body?: unknown;
      query?: Record<string, string | number | undefined>;
      headers?: Record<string, string>;
    } = {},
  ): Promise<T> {
    const headers = this.headersFor(o.headers);
    if (o.body !== undefined) headers.set('content-type', 'application/json');
    const res = await this.fetchImpl(this.url(path, o.query), {
      method,
      headers,
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
      signal: o.signal,
    });
    if (!res.ok) throw await AgentqApiError.from(res);
    // 204 No Content (a delete).
    return (res.status === 204 ? undefined : await res.json()) as T;
  }

  private runPath(id: string, sub = '') {
    return `/v1/runs/${encodeURIComponent(id)}${sub}`;
  }

  /** Starts a run. With an idempotency key, a retry returns the same run instead of a second one. */
  createRun(body: CreateRunRequest, opts: RequestOptions & { idempotencyKey?: string } = {}): Promise<Run> {
    return this.request('POST', '/v1/runs', {
      body,
      signal: opts.signal,
      headers: opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {},
    });
  }

  getRun(id: string, opts: RequestOptions = {}): Promise<Run> {
    return this.request('GET', this.runPath(id), opts);
  }

  /** One page of runs, newest first. */
  listRuns(params: ListRunsParams = {}, opts: RequestOptions = {}): Promise<RunList> {
    return this.request('GET', '/v1/runs', {
      ...opts,
      query: { status: params.status, limit: params.limit, after: params.after },
    });
  }

  /** Every run (of a status), newest first, page after page as the iteration goes. */
  async *listAllRuns(params: Omit<ListRunsParams, 'after'> = {}, opts: RequestOptions = {}): AsyncGenerator<Run> {
    let after: string | undefined;
    do {
      const page = await this.listRuns({ ...params, after }, opts);
      yield* page.data;
      after = page.next ?? undefined;
    } while (after);
  }

  /** The transcript, in OpenAI chat format. */
  async getMessages(id: string, opts: RequestOptions = {}): Promise<ChatMessage[]> {
    return (await this.request<{ data: ChatMessage[] }>('GET', this.runPath(id, '/messages'), opts)).data;
  }

  async getSteps(id: string, opts: RequestOptions = {}): Promise<Step[]> {
    return (await this.request<{ data: Step[] }>('GET', this.runPath(id, '/steps'), opts)).data;
  }

  /** The sub-agent runs the run started. */
  async getChildren(id: string, opts: RequestOptions = {}): Promise<Run[]> {
    return (await this.request<{ data: Run[] }>('GET', this.runPath(id, '/children'), opts)).data;
  }

  async getWebhookDeliveries(id: string, opts: RequestOptions = {}): Promise<WebhookDelivery[]> {
    return (await this.request<{ data: WebhookDelivery[] }>('GET', this.runPath(id, '/webhook-deliveries'), opts)).data;
  }

  async listTools(opts: RequestOptions = {}): Promise<Tool[]> {
    return (await this.request<{ data: Tool[] }>('GET', '/v1/tools', opts)).data;
  }

  /** Cancels a run and its sub-runs; a finished run comes back unchanged. */
  cancelRun(id: string, opts: RequestOptions = {}): Promise<Run> {
    return this.request('POST', this.runPath(id, '/cancel'), opts);
  }

  /** One page of the tenant's requests for an answer across all its runs, newest first. */
  listActions(params: ListActionsParams = {}, opts: RequestOptions = {}): Promise<ActionList> {
    return this.request('GET', '/v1/actions', {
      ...opts,
      query: { status: params.status, limit: params.limit, after: params.after },
    });
  }

  /** Every request (of a status), newest first, page after page as the iteration goes. */
  async *listAllActions(
    params: Omit<ListActionsParams, 'after'> = {},
    opts: RequestOptions = {},
  ): AsyncGenerator<InboxItem> {
    let after: string | undefined;
    do {
      const page = await this.listActions({ ...params, after }, opts);
      yield* page.data;
      after = page.next ?? undefined;
    } while (after);
  }

  /**
   * Answers requests a run waits for (`runId`: the waiting run or its root) and returns the run.
   * All or none are checked first (a bad one: 400, nothing stored); a request decided before
   * (a lost race, an expiry, a cancel) throws ActionResolvedError, and the others were stored.
   */
  respond(runId: string, responses: ActionResponse[], opts: RequestOptions = {}): Promise<Run> {
    return this.request('POST', this.runPath(runId, '/actions'), { ...opts, body: { responses } });
  }

  /**
   * Approves a tool call; with `arguments` (JSON text, or an object to serialise) it runs with
   * those instead, once they pass the tool's input schema (else a 400 naming the problem).
   */
  approve(
    runId: string,
    actionId: string,
    o: { arguments?: string | Record<string, unknown> } = {},
    opts: RequestOptions = {},
  ): Promise<Run> {
    const edited =
      o.arguments === undefined
        ? {}
        : { arguments: typeof o.arguments === 'string' ? o.arguments : JSON.stringify(o.arguments) };
    return this.respond(runId, [{ id: actionId, approve: true, ...edited }], opts);
  }

  /** Rejects a tool call: it never runs, and the model reads the reason. */
  reject(runId: string, actionId: string, reason?: string, opts: RequestOptions = {}): Promise<Run> {
    return this.respond(runId, [{ id: actionId, approve: false, ...(reason === undefined ? {} : { reason }) }], opts);
  }

  /** Answers a question the model asked (`ask_human`). */
  answer(runId: string, actionId: string, text: string, opts: RequestOptions = {}): Promise<Run> {
    return this.respond(runId, [{ id: actionId, answer: text }], opts);
  }

  /** Gives the output of a client tool's call, which the model reads as the tool's result. */
  submitToolOutput(runId: string, actionId: string, output: string, opts: RequestOptions = {}): Promise<Run> {
    return this.respond(runId, [{ id: actionId, output }], opts);
  }

  /**
   * Polls until the run is finished, pausing longer each time (see the options); rides out
   * 429/5xx and network errors until the deadline. Throws AgentqTimeoutError at the deadline.
   * A run in `requires_action` is not finished: it waits until someone answers (`respond`).
   */
  async waitForRun(id: string, opts: WaitForRunOptions = {}): Promise<Run> {
    const timeoutMs = opts.timeoutMs ?? 600_000;
    let last: Run | undefined;
    const finished = async () => {
      last = await this.getRun(id, { signal: opts.signal });
      return isTerminalStatus(last.status) ? last : undefined;
    };
    const poller = {
      timeoutMs,
      intervalMs: opts.pollIntervalMs ?? 200,
      maxIntervalMs: opts.maxPollIntervalMs ?? 2000,
      signal: opts.signal,
    };
    return poll(
      finished,
      poller,
      () => new AgentqTimeoutError(`run ${id} is still ${last?.status ?? 'unknown'} after ${timeoutMs} ms`, last),
    );
  }

  /**
   * Waits until the API answers with its Redis reachable (`GET /readyz`) and offers every tool
   * named in `tools`; returns the tools offered. Refused connections and 503s mean "not yet":
   * for a script that has just started agentq. Throws AgentqTimeoutError at the deadline.
   */
  async waitForReady(opts: WaitForReadyOptions = {}): Promise<Tool[]> {
    const timeoutMs = opts.timeoutMs ?? 30_000;
    let missing: string[] = [];
    const ready = async () => {
      await this.request('GET', '/readyz', { signal: opts.signal });
      const tools = await this.listTools({ signal: opts.signal });
      missing = (opts.tools ?? []).filter((name) => !tools.some((t) => t.name === name));
      return missing.length ? undefined : tools;
    };
    const poller = { timeoutMs, intervalMs: opts.pollIntervalMs ?? 100, maxIntervalMs: 1000, signal: opts.signal };
    return poll(ready, poller, (err) => {
      const cause = (err as { cause?: { code?: string; message?: string } } | undefined)?.cause;
      const detail = cause?.code ?? cause?.message;
      const why = err
        ? `${(err as Error).message}${detail ? ` (${detail})` : ''}`
        : `tools not offered yet: ${missing.join(', ')}`;
      return new AgentqTimeoutError(`${this.baseUrl} is not ready after ${timeoutMs} ms: ${why}`, undefined);
    });
  }

  /**
   * The run's events as they happen (a late call first gets the history), ending after the
   * terminal event. A dropped connection is resumed with `Last-Event-ID`, so every event
   * comes exactly once. Break out of the loop or abort the signal to stop.
   */
  async *streamEvents(id: string, opts: StreamEventsOptions = {}): AsyncGenerator<RunEvent> {
    let last = opts.lastEventId;
    let delay = opts.retryDelayMs ?? 250;
    let failures = 0;
    for (;;) {
      opts.signal?.throwIfAborted();
      // One controller per connection: stopping the loop closes the connection too.
      const conn = new AbortController();
      const onAbort = () => conn.abort(opts.signal!.reason);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      let error: unknown;
      try {
        const res = await this.fetchImpl(this.url(this.runPath(id, '/events')), {
          headers: this.headersFor({ accept: 'text/event-stream', ...(last ? { 'last-event-id': last } : {}) }),
          signal: conn.signal,
        });
        if (!res.ok) throw await AgentqApiError.from(res);
        if (!res.body) throw new TypeError('the event stream has no body');
        for await (const msg of parseSse(res.body)) {
          if (msg.retry !== undefined) delay = msg.retry;
          if (msg.id === undefined) continue;
          const event = { id: msg.id, event: msg.event, data: JSON.parse(msg.data) } as RunEvent;
          last = msg.id;
          failures = 0;
          yield event;
          if (TERMINAL_EVENTS.includes(event.event)) return;
        }
        error = new TypeError('the event stream ended before the run did');
      } catch (err) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        // A dropped connection surfaces as a TypeError ("terminated", "fetch failed").
        if (!isTransient(err)) throw err;
        error = err;
      } finally {
        opts.signal?.removeEventListener('abort', onAbort);
        conn.abort();
      }
      failures++;
      if (failures > (opts.maxRetries ?? 10)) throw error;
      opts.onReconnect?.({ attempt: failures, lastEventId: last, error });
      await sleep(Math.min(delay * 2 ** (failures - 1), 5000), opts.signal);
    }
  }
}
