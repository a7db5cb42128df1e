import { z } from 'zod';
import { createRunBodySchema, type AgentRef } from './run.js';

/** A saved agent's name: unique per tenant, part of `agent: "name@3"` and of tool schemas. */
export const AGENT_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const agentNameSchema = z
  .string()
  .regex(AGENT_NAME_PATTERN, '1-64 of a-z 0-9 _ -, starting with a letter or digit (e.g. "analyst")');

/** The longest description (the model reads it when it chooses a sub-agent). */
export const AGENT_DESCRIPTION_MAX_CHARS = 4096;
/** The largest agent as JSON: every run that names it reads it. */
export const AGENT_MAX_BYTES = 1024 * 1024;

/**
 * The fields of a run that an agent defines, in the order its object shows them. A run that
 * names the agent takes each of them it does not give itself.
 */
export const AGENT_RUN_FIELDS = [
  'instructions',
  'model',
  'model_settings',
  'fallback_models',
  'tools',
  'tool_limits',
  'max_depth',
  'max_total_tokens',
  'max_cost_usd',
  'timeout_ms',
  'on_budget_exhausted',
  'response_format',
  'structured_output_retries',
  'subagents',
  'approval',
  'client_tools',
  'human_input',
  'metadata',
] as const satisfies ReadonlyArray<keyof typeof createRunBodySchema.shape>;
export type AgentRunField = (typeof AGENT_RUN_FIELDS)[number];

const runShape = createRunBodySchema.shape;
const agentFields = Object.fromEntries(AGENT_RUN_FIELDS.map((f) => [f, runShape[f]])) as {
  [F in AgentRunField]: (typeof runShape)[F];
};

/** The body of `PUT /v1/agents/:name` (the name is the path's; given here too, it must be the same). */
export const putAgentBodySchema = z
  .strictObject({
    name: agentNameSchema.optional(),
    description: z.string().max(AGENT_DESCRIPTION_MAX_CHARS).optional(),
    ...agentFields,
  })
  .refine((a) => Buffer.byteLength(JSON.stringify(a), 'utf8') <= AGENT_MAX_BYTES, {
    message: `an agent may be at most ${AGENT_MAX_BYTES} bytes as JSON`,
  });

/** The body of `POST /v1/agents`. */
export const createAgentBodySchema = putAgentBodySchema.safeExtend({ name: agentNameSchema });

export type AgentDefinition = z.infer<typeof putAgentBodySchema>;

/** One version of a saved agent, as stored and (with every field named) as the API shows it. */
export type AgentRecord = Omit<AgentDefinition, 'name'> & {
  object: 'agent';
  name: string;
  version: number;
  created_at: string;
};

/** `name` or `name@3` split; the version is undefined for the latest. */
export function parseAgentRef(ref: string): { name: string; version?: number } {
  const at = ref.indexOf('@');
  return at < 0 ? { name: ref } : { name: ref.slice(0, at), version: Number(ref.slice(at + 1)) };
}

/** `name@version`, as the run object's `agent` says. */
export const agentRefText = (a: AgentRef) => `${a.name}@${a.version}`;

/** The query of `GET /v1/agents`. */
export const listAgentsQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(100),
  after: agentNameSchema.optional(),
});

// The response shapes (loose: the service may add fields).
const timestamp = z.iso.datetime({ offset: true });
const nullable = (s: z.ZodType) => s.nullable();

/** A saved agent at one version (`GET /v1/agents/:name`). */
export const agentObjectSchema = z.looseObject({
  object: z.literal('agent'),
  name: z.string(),
  version: z.number().int().min(1),
  description: z.string().nullable(),
  ...(Object.fromEntries(AGENT_RUN_FIELDS.map((f) => [f, nullable(z.unknown())])) as Record<
    AgentRunField,
    z.ZodNullable<z.ZodUnknown>
  >),
  created_at: timestamp,
  /** On a write: what may not work yet (an agent of `subagents.agents` not saved). */
  warnings: z.array(z.string()).optional(),
});

/** `GET /v1/agents` (the latest version of each, by name) and `GET /v1/agents/:name/versions` (newest first). */
export const agentListSchema = z.looseObject({ data: z.array(agentObjectSchema), next: z.string().nullable() });
