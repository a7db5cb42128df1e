import { listAgentsQuerySchema } from '@agentq/shared/core';
import { errors, errorResponse, json, listQueryParams, ref, type OpenApiPathItem } from './openapi-parts.js';

const nameParam = {
  name: 'name',
  in: 'path',
  required: true,
  description: 'An agent name.',
  schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' },
};
const notFound = { 404: errorResponse('No agent of this name (or version) for this key: `agent_not_found`.') };
const body = (id: string) => ({ required: true, content: { 'application/json': { schema: ref(id) } } });

/** The paths of `/v1/agents` in the OpenAPI document. */
export function agentPaths(): Record<string, OpenApiPathItem> {
  return {
    '/v1/agents': {
      post: {
        tags: ['agents'],
        operationId: 'createAgent',
        summary: 'Save a new agent',
        description:
          'Saves version 1 of a named agent: the fields a run takes from it when it names it (`"agent": "name"`). ' +
          '`warnings` lists agents of `subagents.agents` not saved yet.',
        requestBody: body('CreateAgentRequest'),
        responses: {
          201: json('The agent, version 1.', ref('Agent'), {
            Location: { description: 'The agent’s URL.', schema: { type: 'string' } },
          }),
          409: errorResponse('An agent of this name exists: PUT saves its next version (`agent_exists`).'),
          ...errors(400, 401, 429, 413, 415, 503),
        },
      },
      get: {
        tags: ['agents'],
        operationId: 'listAgents',
        summary: 'List agents',
        description: "The key's agents by name, each at its latest version.",
        parameters: listQueryParams(listAgentsQuerySchema, 'agents').filter((p) => p.name !== 'status'),
        responses: { 200: json('A page of agents.', ref('AgentList')), ...errors(400, 401, 429, 503) },
      },
    },
    '/v1/agents/{name}': {
      put: {
        tags: ['agents'],
        operationId: 'putAgent',
        summary: 'Save an agent’s next version',
        description:
          'Creates the agent (201, version 1) or saves its next version (200). A definition equal to the latest ' +
          'version’s saves nothing and returns that version. Runs made from earlier versions keep them.',
        parameters: [nameParam],
        requestBody: body('PutAgentRequest'),
        responses: {
          200: json('The agent at its new (or unchanged latest) version.', ref('Agent')),
          201: json('The agent, version 1.', ref('Agent')),
          ...errors(400, 401, 429, 413, 415, 503),
        },
      },
      get: {
        tags: ['agents'],
        operationId: 'getAgent',
        summary: 'Get an agent',
        description: 'The agent at its latest version.',
        parameters: [nameParam],
        responses: { 200: json('The agent.', ref('Agent')), ...notFound, ...errors(401, 429, 503) },
      },
      delete: {
        tags: ['agents'],
        operationId: 'deleteAgent',
        summary: 'Delete an agent',
        description: 'Deletes the agent and all its versions. Runs made from it keep what they took.',
        parameters: [nameParam],
        responses: { 204: { description: 'Deleted.' }, ...notFound, ...errors(401, 429, 503) },
      },
    },
    '/v1/agents/{name}/versions': {
      get: {
        tags: ['agents'],
        operationId: 'listAgentVersions',
        summary: 'List an agent’s versions',
        description: 'Newest first; pass "next" as "after" for older ones.',
        parameters: [
          nameParam,
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100 } },
          {
            name: 'after',
            in: 'query',
            required: false,
            description: 'Versions below this one.',
            schema: { type: 'integer', minimum: 1 },
          },
        ],
        responses: { 200: json('A page of versions.', ref('AgentList')), ...notFound, ...errors(400, 401, 429, 503) },
      },
    },
    '/v1/agents/{name}/versions/{version}': {
      get: {
        tags: ['agents'],
        operationId: 'getAgentVersion',
        summary: 'Get one version of an agent',
        parameters: [
          nameParam,
          { name: 'version', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } },
        ],
        responses: { 200: json('The agent at that version.', ref('Agent')), ...notFound, ...errors(401, 429, 503) },
      },
    },
  };
}
