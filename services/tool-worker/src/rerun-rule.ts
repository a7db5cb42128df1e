import { toolFailed, type ToolOutcome } from '@agentq/shared/core';
import type { ToolDescriptor } from './mcp-tools.js';

/** True when running a tool twice is harmless, by its MCP annotations. */
export function safeToRerun(tool: ToolDescriptor | undefined): boolean {
  return Boolean(tool?.annotations?.readOnlyHint || tool?.annotations?.idempotentHint);
}

/**
 * The one rule for a call that got no answer, wherever it broke (a dropped connection, a server
 * that died, a worker that died mid-call): it may be sent again only when the request provably
 * never left (`not_delivered`), or when the tool declares a rerun harmless; otherwise it may
 * have had its effect (`lost`) and ends as {@link unknownOutcome}.
 */
export function maySendAgain(fault: 'not_delivered' | 'lost', tool: ToolDescriptor | undefined): boolean {
  return fault === 'not_delivered' || safeToRerun(tool);
}

/** The outcome of a call that may have had its effect and is not run again; `why` says what broke. */
export function unknownOutcome(why: string): ToolOutcome {
  return toolFailed(
    'unknown_outcome',
    `the outcome is unknown: ${why}, and the tool is not marked idempotent, ` +
      `so it was not run again. Check its effect before retrying.`,
  );
}
