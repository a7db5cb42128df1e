import { Hono } from 'hono';
import {
  AGENT_RUN_FIELDS,
  agentNameSchema,
  createAgentBodySchema,
  listAgentsQuerySchema,
  putAgentBodySchema,
  type AgentRecord,
  type CreateRunBody,
} from '@agentq/shared/core';
import type { RunStore } from '@agentq/shared/store';
import { agentWarnings, buildRun, pinSubagentTypes, resolveRunAgent, type RunPlan } from '@agentq/shared/runs';
import { z } from 'zod';
import { HttpError } from '../http-error.js';
import { checkSizes, type RunLimits } from '../run-request.js';
import { parseOr400, readJson } from '../validation.js';

type Env = { Variables: { tenant: string } };

/** An agent as the API shows it: every field named, null where the agent has none. */
export function agentObject(a: AgentRecord, warnings: string[] = []) {
  const fields = a as Record<string, unknown>;
  return {
    object: 'agent' as const,
    name: a.name,
    version: a.version,
    description: a.description ?? null,
    ...Object.fromEntries(AGENT_RUN_FIELDS.map((f) => [f, fields[f] ?? null])),
    created_at: a.created_at,
    ...(warnings.length ? { warnings } : {}),
  };
}

const agentNotFound = (ref: string) =>
  new HttpError(404, 'agent_not_found', `no agent "${ref.slice(0, 100)}" (see GET /v1/agents)`);

/** The path's agent name, or a 404 (a name that cannot exist names no agent). */
function nameOf(raw: string): string {
  if (!agentNameSchema.safeParse(raw).success) throw agentNotFound(raw);
  return raw;
}

const versionsQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(100),
  after: z.coerce.number().int().min(1).optional(),
});

/** `/v1/agents`: saved agents, per key, each write a new version. */
export function agentsRoutes(deps: { store: RunStore }) {
  const app = new Hono<Env>();
  const agents = deps.store.agents;

  app.post('/', async (c) => {
    const tenant = c.get('tenant');
    const { name, ...def } = parseOr400(createAgentBodySchema, await readJson(c.req), 'agent');
    const written = await agents.write(tenant, name, def, 'create');
    if (written.outcome === 'exists')
      throw new HttpError(
        409,
        'agent_exists',
        `an agent "${name}" exists (version ${written.version}); PUT /v1/agents/${name} saves a new version`,
      );
    return c.json(agentObject(written.agent, await agentWarnings(agents, tenant, def)), 201, {
      location: `/v1/agents/${name}`,
    });
  });

  // Creates the agent (201) or saves its next version (200); a definition equal to the latest
  // version's saves nothing and returns that version (200), so that putting the same file again
  // (an agent kept in a repository) makes no new version.
  app.put('/:name', async (c) => {
    const tenant = c.get('tenant');
    const name = nameOf(c.req.param('name'));
    const { name: given, ...def } = parseOr400(putAgentBodySchema, await readJson(c.req), 'agent');
    if (given !== undefined && given !== name)
      throw new HttpError(400, 'validation_error', `name: the body names "${given}", the path "${name}"`, [
        { field: 'name', message: 'must be the name in the path (or left out)' },
      ]);
    const written = await agents.write(tenant, name, def, 'put');
    if (written.outcome === 'exists') throw new Error('a put never finds the agent in the way');
    const status = written.outcome === 'saved' && written.agent.version === 1 ? 201 : 200;
    return c.json(agentObject(written.agent, await agentWarnings(agents, tenant, def)), status);
  });

  app.get('/', async (c) => {
    const q = parseOr400(listAgentsQuerySchema, c.req.query(), 'query');
    const page = await agents.list(c.get('tenant'), q);
    return c.json({ data: page.data.map((a) => agentObject(a)), next: page.next });
  });

  app.get('/:name', async (c) => {
    const name = nameOf(c.req.param('name'));
    const agent = await agents.get(c.get('tenant'), name);
    if (!agent) throw agentNotFound(name);
    return c.json(agentObject(agent));
  });

  app.get('/:name/versions', async (c) => {
    const name = nameOf(c.req.param('name'));
    const q = parseOr400(versionsQuerySchema, c.req.query(), 'query');
    const page = await agents.versions(c.get('tenant'), name, { limit: q.limit, before: q.after });
    if (!page) throw agentNotFound(name);
    return c.json({ data: page.data.map((a) => agentObject(a)), next: page.next });
  });

  app.get('/:name/versions/:version', async (c) => {
    const name = nameOf(c.req.param('name'));
    const raw = c.req.param('version');
    const version = /^[1-9][0-9]{0,8}$/.test(raw) ? Number(raw) : undefined;
    const agent = version === undefined ? null : await agents.get(c.get('tenant'), name, version);
    if (!agent) throw agentNotFound(`${name}@${raw}`);
    return c.json(agentObject(agent));
  });

  app.delete('/:name', async (c) => {
    const name = nameOf(c.req.param('name'));
    if (!(await agents.delete(c.get('tenant'), name))) throw agentNotFound(name);
    return c.body(null, 204);
  });

  return app;
}

/**
 * The plan of a new run from its request: with `agent`, the agent's fields under the request's
 * (a 404 agent_not_found if it names none), checked against the size limits, the sub-agent types
 * it may call fixed at their versions now.
 */
export async function planRun(
  deps: { store: RunStore; limits: RunLimits; defaultModel?: string },
  tenant: string,
  raw: unknown,
  parsed: CreateRunBody,
): Promise<RunPlan> {
  const given = new Set(Object.keys(raw as object));
  const resolved = await resolveRunAgent(deps.store.agents, tenant, parsed, given);
  if ('notFound' in resolved) throw agentNotFound(resolved.notFound);
  checkSizes(resolved.body, deps.limits);
  const plan = buildRun(resolved.body, deps.defaultModel);
  if (resolved.agent) plan.spec.agent = resolved.agent;
  await pinSubagentTypes(deps.store.agents, tenant, plan.spec);
  return plan;
}
