import type { JobContext, ToolCalls } from '@agentq/shared';

/**
 * A tool job's handler that sends the results it holds as it ends. Results completed in the
 * same tick are held to be stored together (ToolCalls.complete), and BullMQ completes the job
 * (which may release the next step), or the tool-worker adds the next step, on the same
 * connection right after the handler, without waiting for the results' reply: sent first, they
 * run first.
 */
export function resultsFirst<D, R>(
  toolCalls: Pick<ToolCalls, 'flushCompletions'>,
  handler: (data: D, ctx: JobContext) => Promise<R>,
): (data: D, ctx: JobContext) => Promise<R> {
  return async (data, ctx) => {
    try {
      return await handler(data, ctx);
    } finally {
      toolCalls.flushCompletions();
    }
  };
}
