import { RetryableError } from '@agentq/shared/core';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { StandIn } from './mcp-message-limit.js';

/** Whether an error is the tool's (data for the model) or the connection's, and if the request got out. */
export type Fault = 'tool' | 'not_delivered' | 'lost';

/** What agentq wrote in place of a server's answer (see standInAnswer), if this error is that. */
function standIn(err: McpError): { agentq: StandIn; text: string } | undefined {
  const data = err.data as { agentq?: unknown; text?: unknown } | undefined;
  return data && typeof data.agentq === 'string' && typeof data.text === 'string'
    ? { agentq: data.agentq as StandIn, text: data.text }
    : undefined;
}

export function classifyFault(err: unknown): Fault {
  if (err instanceof McpError) {
    // An answer over the limit failed that one call, as the tool's; a lost stream is a lost request.
    const s = standIn(err);
    if (s) return s.agentq === 'connection_lost' ? 'lost' : 'tool';
    return err.code === ErrorCode.ConnectionClosed ? 'lost' : 'tool';
  }
  // A result the SDK could not parse came from a live server: the tool answered badly.
  if (err instanceof Error && err.name === 'ZodError') return 'tool';
  if (err instanceof StreamableHTTPError) return err.code === 404 ? 'not_delivered' : 'lost';
  if (err instanceof Error && err.message === 'Not connected') return 'not_delivered';
  const code = errnoCode(err);
  if (code && ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE'].includes(code))
    return 'not_delivered';
  return 'lost';
}

export function errnoCode(err: unknown): string | undefined {
  for (let e: unknown = err, i = 0; e && i < 4; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/**
 * The error of a call whose server cannot be reached, thrown only when sending the call again is
 * safe (see maySendAgain): the tool processor retries it as a job.
 */
export function unavailable(server: string, name: string, err: unknown): RetryableError {
  return new RetryableError(
    `MCP server ${server} is unavailable for ${name}: ${errorText(err)}`,
    'tool_server_unavailable',
    {
      cause: err,
    },
  );
}

export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // agentq's own stand-in answers carry their words for the model.
  if (err instanceof McpError) {
    const s = standIn(err);
    if (s) return s.text;
  }
  const code = errnoCode(err);
  // fetch hides the useful part ("ECONNREFUSED …") in its cause.
  const cause = err.cause instanceof Error && err.cause.message !== err.message ? ` (${err.cause.message})` : '';
  return `${err.message}${cause}${code && !`${err.message}${cause}`.includes(code) ? ` [${code}]` : ''}`;
}

/** Rejects when `promise` takes longer than `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
