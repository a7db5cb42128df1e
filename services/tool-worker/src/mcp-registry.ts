import { RetryableError, toolFailed, type ToolOutcome } from '@agentq/shared/core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { isHttpServer, type McpConfig } from './mcp-config.js';
import { classifyFault, errorText, unavailable, withTimeout, type Fault } from './mcp-faults.js';
import type { AnswerBytesInFlight } from './answer-bytes.js';
import { BoundedStdioTransport } from './mcp-stdio-transport.js';
import { describeTool, listAllTools, type ToolDescriptor } from './mcp-tools.js';
import { renderToolResult } from './tool-result.js';
import { maySendAgain, unknownOutcome } from './rerun-rule.js';
import {
  budgetOf,
  createTransport,
  unknownTool,
  type CallBudget,
  type McpServerStatus,
  type ServerState,
  type ToolCallOptions,
} from './mcp-server-state.js';

export type { McpServerStatus, ToolCallOptions };
import { parseArguments, SchemaValidators } from '@agentq/shared/core';

export type { ToolDescriptor };

/** Options of {@link McpRegistry}. */
export interface McpRegistryOptions {
  config: McpConfig;
  logger: Logger;
  /** Sent to servers as `clientInfo.name`. @defaultValue `'agentq'` */
  clientName?: string;
  /** Bound on spawning/initialising a server and listing its tools. @defaultValue 10000 */
  connectTimeoutMs?: number;
  /** First delay before a background reconnect; doubles per failure up to 30 s. @defaultValue 1000 */
  restartBackoffMs?: number;
  /**
   * The most one message from a server may hold; a bigger answer fails its own call and is read
   * past, never held. @defaultValue 10 MiB
   */
  maxMessageBytes?: number;
  /** Bounds what the answers being read from HTTP servers hold at once; unset: no bound. */
  answersInFlight?: AnswerBytesInFlight;
}

export const DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024;

const MAX_BACKOFF_MS = 30_000;
// Sends of one call that the rule allows (a resend on a live connection can still find the
// server's session gone, and then needs a fresh connection and one more send).
const MAX_SENDS = 3;

/**
 * The MCP servers of one process: connects them once, lists their tools as `<server>__<tool>`,
 * calls them, and restarts servers that die. Tool failures come back as data, and so does a
 * call whose answer was lost when it may have had its effect (`unknown_outcome`); only a call
 * that is safe to send again throws (a RetryableError), when its server cannot be reached.
 */
export class McpRegistry {
  readonly #servers = new Map<string, ServerState>();
  readonly #tools = new Map<string, { descriptor: ToolDescriptor; state: ServerState }>();
  readonly #listeners = new Set<(tools: ToolDescriptor[]) => void>();
  readonly #validators: SchemaValidators;
  readonly #logger: Logger;
  readonly #clientName: string;
  readonly #connectTimeoutMs: number;
  readonly #restartBackoffMs: number;
  readonly #maxMessageBytes: number;
  readonly #answersInFlight: AnswerBytesInFlight | undefined;
  #descriptors: ToolDescriptor[] = [];
  #closed = false;

  constructor(opts: McpRegistryOptions) {
    this.#logger = opts.logger;
    this.#validators = new SchemaValidators(opts.logger);
    this.#clientName = opts.clientName ?? 'agentq';
    this.#connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
    this.#restartBackoffMs = opts.restartBackoffMs ?? 1_000;
    this.#maxMessageBytes = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.#answersInFlight = opts.answersInFlight;
    for (const [name, config] of Object.entries(opts.config.mcpServers)) {
      if (config.disabled) continue;
      const log = opts.logger.child({ mcp_server: name });
      this.#servers.set(name, { name, config, log, tools: [], failures: 0, stderrTail: [] });
    }
  }

  /** Connects every server in parallel; a server that fails is logged and retried in the background. */
  async start(): Promise<void> {
    await Promise.all(
      [...this.#servers.values()].map((s) =>
        this.#ensureConnected(s).catch(() => {
          // #connect has logged it and scheduled a retry; a missing server must not stop the worker.
        }),
      ),
    );
  }

  /** The tools of every server seen so far (a server that is down keeps its last known tools). */
  tools(): ToolDescriptor[] {
    return this.#descriptors;
  }

  /** The state of each enabled server, for health checks, metrics and tests. */
  status(): McpServerStatus[] {
    return [...this.#servers.values()].map((s) => ({
      name: s.name,
      transport: isHttpServer(s.config) ? 'http' : 'stdio',
      connected: s.client !== undefined,
      pid: s.transport instanceof BoundedStdioTransport ? s.transport.pid : undefined,
      tools: s.tools.length,
      failures: s.failures,
    }));
  }

  /** Calls `cb` whenever the tool list changes; returns a function that unsubscribes. */
  onToolsChanged(cb: (tools: ToolDescriptor[]) => void): () => void {
    this.#listeners.add(cb);
    return () => this.#listeners.delete(cb);
  }

  /**
   * Runs a tool. Bad names, bad arguments, tool errors, timeouts (the server's `timeout_ms` or
   * `opts.timeoutMs`, cut short by `opts.deadline`) and answers lost when the tool may have run
   * resolve as error outcomes; an abort via `opts.signal` rethrows its reason; a call that is safe
   * to send again (see maySendAgain) and whose server cannot be reached throws RetryableError
   * (code `tool_server_unavailable`) after at most two resends.
   */
  async call(
    name: string,
    rawArguments: string | Record<string, unknown>,
    opts: ToolCallOptions,
  ): Promise<ToolOutcome> {
    opts.signal?.throwIfAborted();
    if (this.#closed)
      throw new RetryableError(`MCP registry is closed; cannot call ${name}`, 'tool_server_unavailable');
    let entry = this.#tools.get(name);
    if (!entry) {
      const state = this.#serverOf(name);
      // A server that never connected has no known tools yet: connect before calling the name unknown.
      if (!state || state.client) return unknownTool(state?.tools.length ? state.tools : this.#descriptors);
      await this.#connectForCall(state, name);
      entry = this.#tools.get(name);
      if (!entry) return unknownTool(state?.tools.length ? state.tools : this.#descriptors);
    }
    const args = parseArguments(rawArguments);
    if (typeof args === 'string') return toolFailed('invalid_arguments', args);
    const invalid = this.#validators.check(entry.descriptor, args);
    if (invalid) return toolFailed('invalid_arguments', `invalid arguments: ${invalid}`);
    return this.#invoke(
      entry.state,
      entry.descriptor,
      args,
      budgetOf(entry.state.config.timeout_ms ?? opts.timeoutMs, opts),
      MAX_SENDS,
    );
  }

  /** Closes every client and stops every stdio server; never throws. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled(
      [...this.#servers.values()].map(async (s) => {
        clearTimeout(s.retryTimer);
        const client = s.client ?? (await s.connecting?.catch(() => undefined));
        const transport = s.transport;
        s.client = undefined;
        s.transport = undefined;
        if (transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
          // Tell the server it may drop our session; a server that is gone must not delay shutdown.
          await withTimeout(transport.terminateSession(), 1_000).catch(() => undefined);
        }
        await client?.close().catch((err: unknown) => s.log.warn({ err }, 'closing MCP client failed'));
      }),
    );
  }

  async #invoke(
    state: ServerState,
    descriptor: ToolDescriptor,
    args: Record<string, unknown>,
    budget: CallBudget,
    sendsLeft: number,
  ): Promise<ToolOutcome> {
    const client = await this.#connectForCall(state, descriptor.name);
    budget.signal?.throwIfAborted();
    // A per-call controller, so the SDK's listener never outlives the call on a long-lived caller signal.
    const controller = new AbortController();
    const forwardAbort = () => controller.abort(budget.signal?.reason);
    budget.signal?.addEventListener('abort', forwardAbort, { once: true });
    try {
      const result = await client.callTool({ name: descriptor.tool, arguments: args }, undefined, {
        // A resend after a reconnect gets what is left of the budget, not a fresh one.
        timeout: Math.max(1, budget.deadline - Date.now()),
        signal: controller.signal,
      });
      return renderToolResult(result as CallToolResult);
    } catch (err) {
      // The SDK wraps an abort reason in an McpError; the caller wants its own reason back.
      if (budget.signal?.aborted) throw budget.signal.reason;
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        return toolFailed(
          'timeout',
          budget.byRunDeadline
            ? "abandoned at the run's deadline (timeout_ms)"
            : `timed out after ${budget.timeoutMs} ms`,
        );
      }
      const fault = classifyFault(err);
      if (fault === 'tool') return toolFailed('server_error', errorText(err));
      state.log.warn(
        { err: errorText(err), tool: descriptor.tool, fault },
        'MCP server connection failed during a call',
      );
      // The request may have reached the server and the tool may have run: never again.
      if (!maySendAgain(fault, descriptor))
        return unknownOutcome(`the connection to its server broke before it answered (${errorText(err)})`);
      // Safe to send again: here while sends are left, else by the job's retry, which is why this throws.
      const connected = await this.#recover(state, client, fault);
      if (connected && sendsLeft > 1 && budget.deadline > Date.now())
        return this.#invoke(state, descriptor, args, budget, sendsLeft - 1);
      throw unavailable(state.name, descriptor.name, err);
    } finally {
      budget.signal?.removeEventListener('abort', forwardAbort);
    }
  }

  async #connectForCall(state: ServerState, name: string): Promise<Client> {
    try {
      return await this.#ensureConnected(state);
    } catch (err) {
      throw unavailable(state.name, name, err);
    }
  }

  /**
   * Gets a connection to send a call again on; true when there is one. A client is dropped only
   * when the request could not get out on it (refused, not connected, a session the server no
   * longer knows): a `lost` answer says nothing about the connection's other calls, and closing
   * it would fail every one of them. A stdio server that died has closed its client already.
   */
  async #recover(state: ServerState, failed: Client, fault: Fault): Promise<boolean> {
    if (fault === 'not_delivered' && state.client === failed) {
      state.client = undefined;
      state.transport = undefined;
      await failed.close().catch(() => undefined);
    }
    if (this.#closed) return false;
    return this.#ensureConnected(state).then(
      () => true,
      () => false,
    );
  }

  #ensureConnected(state: ServerState): Promise<Client> {
    if (state.client) return Promise.resolve(state.client);
    if (this.#closed) return Promise.reject(new Error('MCP registry is closed'));
    // Concurrent callers share one connection attempt.
    state.connecting ??= this.#connect(state).finally(() => {
      state.connecting = undefined;
    });
    return state.connecting;
  }

  async #connect(state: ServerState): Promise<Client> {
    const started = Date.now();
    const transport = createTransport(state, this.#maxMessageBytes, this.#answersInFlight);
    const client = new Client({ name: this.#clientName, version: '0.1.0' }, { capabilities: {} });
    client.onerror = (err) => state.log.debug({ err: errorText(err) }, 'MCP transport error');
    client.onclose = () => this.#onClosed(state, client);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      this.#refreshTools(state, client).catch((err: unknown) =>
        state.log.warn({ err: errorText(err) }, 'refreshing MCP tools after list_changed failed'),
      );
    });
    try {
      await withTimeout(client.connect(transport, { timeout: this.#connectTimeoutMs }), this.#connectTimeoutMs);
      const tools = await listAllTools(client, this.#connectTimeoutMs);
      if (this.#closed) throw new Error('MCP registry closed while connecting');
      state.client = client;
      state.transport = transport;
      state.failures = 0;
      clearTimeout(state.retryTimer);
      state.retryTimer = undefined;
      this.#setTools(state, tools);
      const pid = transport instanceof BoundedStdioTransport ? transport.pid : undefined;
      state.log.info({ tools: tools.length, pid, ms: Date.now() - started }, 'MCP server connected');
      return client;
    } catch (err) {
      await client.close().catch(() => undefined);
      if (this.#closed) throw err;
      state.failures += 1;
      state.log.error(
        {
          err: errorText(err),
          attempt: state.failures,
          stderr: state.stderrTail.length ? state.stderrTail : undefined,
        },
        'MCP server failed to connect',
      );
      this.#scheduleReconnect(state);
      throw err;
    }
  }

  #onClosed(state: ServerState, client: Client): void {
    // Closes of clients we already replaced or dropped on purpose are not news.
    if (state.client !== client) return;
    state.client = undefined;
    state.transport = undefined;
    if (this.#closed) return;
    state.log.warn(
      { stderr: state.stderrTail.length ? state.stderrTail : undefined },
      'MCP server connection closed; restarting',
    );
    this.#scheduleReconnect(state);
  }

  #scheduleReconnect(state: ServerState): void {
    if (this.#closed || state.retryTimer) return;
    const delay = Math.min(
      this.#restartBackoffMs * 2 ** Math.max(0, state.failures - 1),
      Math.max(MAX_BACKOFF_MS, this.#restartBackoffMs),
    );
    state.retryTimer = setTimeout(() => {
      state.retryTimer = undefined;
      this.#ensureConnected(state).catch(() => {
        // #connect logged it and scheduled the next attempt.
      });
    }, delay);
    // A pending restart must not keep a finished process alive.
    state.retryTimer.unref();
  }

  async #refreshTools(state: ServerState, client: Client): Promise<void> {
    const tools = await listAllTools(client, this.#connectTimeoutMs);
    if (state.client === client) this.#setTools(state, tools);
  }

  #setTools(state: ServerState, tools: Tool[]): void {
    const byName = new Map<string, ToolDescriptor>();
    for (const tool of tools) {
      const descriptor = describeTool(state.name, tool);
      if (byName.has(descriptor.name)) {
        state.log.warn({ tool: tool.name, name: descriptor.name }, 'two MCP tools map to one name; keeping the first');
        continue;
      }
      byName.set(descriptor.name, descriptor);
    }
    const next = [...byName.values()];
    const changed = JSON.stringify(next) !== JSON.stringify(state.tools);
    state.tools = next;
    if (!changed) return;
    this.#tools.clear();
    for (const s of this.#servers.values()) {
      for (const descriptor of s.tools) this.#tools.set(descriptor.name, { descriptor, state: s });
    }
    this.#descriptors = [...this.#tools.values()].map((e) => e.descriptor);
    for (const cb of this.#listeners) {
      try {
        cb(this.#descriptors);
      } catch (err) {
        this.#logger.error({ err }, 'onToolsChanged listener threw');
      }
    }
  }

  /** The configured server a tool name belongs to; the longest prefix wins (`a_` beats `a`). */
  #serverOf(name: string): ServerState | undefined {
    let best: ServerState | undefined;
    for (const s of this.#servers.values()) {
      if (name.startsWith(`${s.name}__`) && (!best || s.name.length > best.name.length)) best = s;
    }
    return best;
  }
}
