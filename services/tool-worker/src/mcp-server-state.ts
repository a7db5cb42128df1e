// What the MCP registry (mcp-registry.ts) keeps of each server, how it reaches it, how long one
// call may take, and what a call of a tool no server has is told.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { toolFailed, type ToolOutcome } from '@agentq/shared/core';
import type { AnswerBytesInFlight } from './answer-bytes.js';
import type { Logger } from 'pino';
import { isHttpServer, type McpServerConfig } from './mcp-config.js';
import { boundedFetch } from './mcp-http-fetch.js';
import { pipeStderr } from './mcp-stderr.js';
import { BoundedStdioTransport } from './mcp-stdio-transport.js';
import type { ToolDescriptor } from './mcp-tools.js';

/** Options of one {@link McpRegistry.call}. */
export interface ToolCallOptions {
  /** Time the tool may take when its server's `timeout_ms` (mcp.json) is not set. */
  timeoutMs: number;
  /** The run's deadline (ms since epoch): the call is abandoned then, whatever its timeout. */
  deadline?: number;
  /** Aborting it cancels the call (the server is told) and `call` rethrows the abort reason. */
  signal?: AbortSignal;
}

/** When one call gives up: its deadline, and whether that is the run's. */
export interface CallBudget {
  deadline: number;
  timeoutMs: number;
  byRunDeadline: boolean;
  signal?: AbortSignal;
}

/** One server as {@link McpRegistry.status} reports it. */
export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  connected: boolean;
  /** The child process of a connected stdio server. */
  pid?: number;
  tools: number;
  /** Connection attempts failed in a row. */
  failures: number;
}

export interface ServerState {
  name: string;
  config: McpServerConfig;
  log: Logger;
  client?: Client;
  transport?: BoundedStdioTransport | StreamableHTTPClientTransport;
  connecting?: Promise<Client>;
  tools: ToolDescriptor[];
  failures: number;
  retryTimer?: NodeJS.Timeout;
  stderrTail: string[];
}

/** A call's deadline: its timeout, or the run's deadline when that comes first. */
export function budgetOf(timeoutMs: number, opts: ToolCallOptions): CallBudget {
  const now = Date.now();
  const byRunDeadline = opts.deadline !== undefined && opts.deadline - now <= timeoutMs;
  return { deadline: byRunDeadline ? opts.deadline! : now + timeoutMs, timeoutMs, byRunDeadline, signal: opts.signal };
}

const MAX_LISTED_NAMES = 40;

/** A transport to a server: Streamable HTTP, or a stdio child process whose stderr is kept. */
export function createTransport(
  state: ServerState,
  maxMessageBytes: number,
  answersInFlight?: AnswerBytesInFlight,
): BoundedStdioTransport | StreamableHTTPClientTransport {
  const c = state.config;
  if (isHttpServer(c)) {
    return new StreamableHTTPClientTransport(new URL(c.url), {
      requestInit: { headers: c.headers },
      fetch: boundedFetch(maxMessageBytes, fetch, answersInFlight),
    });
  }
  const transport = new BoundedStdioTransport({
    command: c.command,
    args: c.args,
    env: c.env,
    cwd: c.cwd,
    maxMessageBytes,
  });
  state.stderrTail = [];
  pipeStderr(transport.stderr, state);
  return transport;
}

/**
 * A call that names no tool it knows (the model sees the name asked for in front of this text):
 * the tools it could have meant, the server's own first (that helps the model fix a typo).
 */
export function unknownTool(known: ToolDescriptor[]): ToolOutcome {
  const names = known.map((d) => d.name);
  if (names.length === 0) return toolFailed('refused', 'unknown tool; no tools are available');
  const shown = names.slice(0, MAX_LISTED_NAMES).join(', ');
  const more = names.length > MAX_LISTED_NAMES ? `, … (${names.length - MAX_LISTED_NAMES} more)` : '';
  return toolFailed('refused', `unknown tool; available tools: ${shown}${more}`);
}
