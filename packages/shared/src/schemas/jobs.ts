import { z } from 'zod';

/** The W3C trace context a job's span joins (set when tracing is on; see run-tracing.ts). */
const traceparent = z.string().max(256);

/** One model step of a run: `depth` tool rounds are done before it. */
export const agentTurnJobSchema = z.object({ runId: z.string(), depth: z.number().int().min(0), traceparent: traceparent.optional() });
export type AgentTurnJob = z.infer<typeof agentTurnJobSchema>;

/** One tool call of a step, the `index`-th of the assistant's `tool_calls`. */
export const toolCallJobSchema = z.object({
  runId: z.string(),
  depth: z.number().int().min(0),
  index: z.number().int().min(0),
  toolCallId: z.string(),
  name: z.string(),
  arguments: z.string(),
  /** How many calls the step made; lets the round's last result append the tool messages. */
  count: z.number().int().min(1).optional(),
  traceparent: traceparent.optional(),
});
export type ToolCallJob = z.infer<typeof toolCallJobSchema>;

/** One webhook to deliver for a run's terminal event. */
export const webhookJobSchema = z.object({
  runId: z.string(),
  webhookId: z.string(),
  type: z.string(),
});
export type WebhookJob = z.infer<typeof webhookJobSchema>;
