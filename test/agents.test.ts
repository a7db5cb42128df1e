import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentqClient, type Agent } from '@agentq/client';
import type { ChatRequest } from '@agentq/scripted-llm';
import { main, type Io } from '../packages/client/src/cli-main.js';
import { bodyOf, errorOf } from './fixtures/api-client.js';
import { startStack, type Stack } from './fixtures/services.js';

const KEY = 'agents-key-one';
const OTHER = 'agents-key-two';

// The model answers with what it was given: the system prompt and the model it was asked for.
const gates = new Map<string, Promise<void>>();
const systemOf = (req: ChatRequest) => req.messages.find((m) => m.role === 'system')?.content ?? '(none)';
const userOf = (req: ChatRequest) => String(req.messages.find((m) => m.role === 'user')?.content ?? '');
async function handler(req: ChatRequest) {
  await gates.get(userOf(req));
  // Tool limits: search twice, then search twice more and get once, then get again, then answer.
  if (userOf(req) === 'LIMITS') {
    const rounds = [
      ['crm__search_contacts', 'crm__search_contacts'],
      ['crm__search_contacts', 'crm__search_contacts', 'crm__get_contact'],
      ['crm__get_contact'],
    ];
    const done = req.messages.filter((m) => m.role === 'assistant').length;
    const names = rounds[done];
    if (!names) return { content: 'limited' };
    const args = (n: string) => (n === 'crm__get_contact' ? { id: 'c1' } : { query: `q${done}` });
    return { tool_calls: names.map((name) => ({ name, arguments: args(name) })) };
  }
  // Structured output: a wrong answer first; once told what failed (a second user message), a right one.
  if (userOf(req).startsWith('REPAIR')) {
    const told = req.messages.filter((m) => m.role === 'user').length > 1;
    return { content: told && userOf(req) === 'REPAIR once' ? '{"n": 2}' : '{"n": "two"}' };
  }
  return { content: `system=${String(systemOf(req))} model=${req.model}` };
}

let stack: Stack;
let dir: string;
beforeAll(async () => {
  stack = await startStack({ handler, apiKey: KEY, env: { API_KEYS: `${KEY},${OTHER}` } });
  dir = mkdtempSync(join(tmpdir(), 'agentq-agents-'));
});
afterAll(async () => {
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

const send = (method: string, path: string, json?: unknown, key?: string) =>
  stack.request(path, { method, ...(json === undefined ? {} : { json }), ...(key ? { key } : {}) });
const put = async (name: string, def: Record<string, unknown>) => {
  const res = await send('PUT', `/v1/agents/${name}`, def);
  expect([200, 201], JSON.stringify(await res.clone().json())).toContain(res.status);
  return bodyOf<Agent>(res);
};

describe('saved agents', () => {
  it('are versioned per key: create, replace, read each version, list, delete', async () => {
    const created = await send('POST', '/v1/agents', {
      name: 'helper',
      description: 'Helps.',
      instructions: 'You are v1.',
      model: 'model-a',
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe('/v1/agents/helper');
    const v1 = await bodyOf<Agent>(created);
    expect(v1).toMatchObject({ object: 'agent', name: 'helper', version: 1, instructions: 'You are v1.' });
    // Every field of the contract is named, null where the agent has none.
    expect(v1).toMatchObject({ tools: null, max_total_tokens: null, response_format: null, max_depth: 10 });

    const again = await send('POST', '/v1/agents', { name: 'helper', instructions: 'x' });
    expect(again.status).toBe(409);
    expect((await errorOf(again)).code).toBe('agent_exists');

    const v2 = await put('helper', { description: 'Helps.', instructions: 'You are v2.', model: 'model-a' });
    expect(v2.version).toBe(2);
    // The same definition again makes no new version.
    expect(
      (await put('helper', { description: 'Helps.', instructions: 'You are v2.', model: 'model-a' })).version,
    ).toBe(2);
    expect((await stack.getJson('/v1/agents/helper')) as unknown).toMatchObject({ version: 2 });
    expect(await stack.getJson('/v1/agents/helper/versions/1')).toMatchObject({ instructions: 'You are v1.' });
    const versions = (await stack.getJson('/v1/agents/helper/versions')) as { data: Agent[] };
    expect(versions.data.map((a) => a.version)).toEqual([2, 1]);
    const page = (await stack.getJson('/v1/agents/helper/versions?limit=1')) as { data: Agent[]; next: string };
    expect(page.data.map((a) => a.version)).toEqual([2]);
    expect(((await stack.getJson(`/v1/agents/helper/versions?after=${page.next}`)) as { data: Agent[] }).data).toEqual([
      expect.objectContaining({ version: 1 }),
    ]);

    for (const path of ['/v1/agents/helper/versions/3', '/v1/agents/helper/versions/x', '/v1/agents/Nope']) {
      const res = await stack.request(path);
      expect(res.status, path).toBe(404);
      expect((await errorOf(res)).code).toBe('agent_not_found');
    }
    // Another key sees nothing of them, and may have an agent of the same name.
    expect((await send('GET', '/v1/agents/helper', undefined, OTHER)).status).toBe(404);
    expect((await bodyOf<{ data: Agent[] }>(await send('GET', '/v1/agents', undefined, OTHER))).data).toEqual([]);
    expect((await send('POST', '/v1/agents', { name: 'helper' }, OTHER)).status).toBe(201);

    const listed = (await stack.getJson('/v1/agents')) as { data: Agent[] };
    expect(listed.data.find((a) => a.name === 'helper')?.version).toBe(2);
    expect((await send('DELETE', '/v1/agents/helper')).status).toBe(204);
    expect((await stack.request('/v1/agents/helper')).status).toBe(404);
    expect((await send('DELETE', '/v1/agents/helper')).status).toBe(404);
    expect((await send('GET', '/v1/agents/helper', undefined, OTHER)).status).toBe(200);
  });

  it('refuses a bad definition with a 400 naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      [{ name: 'Bad Name' }, 'name'],
      [{ name: 'ok', surprise: 1 }, 'surprise'],
      [{ name: 'ok', max_depth: 0 }, 'max_depth'],
      [{ name: 'ok', subagents: { agents: ['x'] } }, 'subagents.enabled'],
      [{ name: 'ok', subagents: { enabled: true, agents: ['Bad!'] } }, 'subagents.agents.0'],
      [{ name: 'ok', description: 'd'.repeat(5000) }, 'description'],
    ];
    for (const [body, field] of cases) {
      const res = await send('POST', '/v1/agents', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await errorOf(res)).details, JSON.stringify(body)).toContainEqual(expect.objectContaining({ field }));
    }
    const other = await send('PUT', '/v1/agents/one', { name: 'two' });
    expect(other.status).toBe(400);
  });

  it('accepts an agent that may call agents not saved yet, with a warning', async () => {
    const a = await put('caller', { subagents: { enabled: true, agents: ['ghost'] } });
    expect(a.warnings).toEqual([expect.stringContaining('"ghost"')]);
  });
});

describe('runs of a saved agent', () => {
  it('take the version they name, or the latest when they were made: a later version changes none of them', async () => {
    await put('writer', { instructions: 'You are writer v1.' });
    // Made from v1; its step waits until v2 is saved.
    let open!: () => void;
    gates.set('gated', new Promise<void>((r) => (open = r)));
    const early = await stack.createRun({ agent: 'writer', input: 'gated' });
    expect(early.agent).toEqual({ name: 'writer', version: 1 });
    await put('writer', { instructions: 'You are writer v2.' });
    open();
    const pinned = await stack.createRun({ agent: 'writer@1', input: 'pinned' });
    const latest = await stack.createRun({ agent: 'writer', input: 'latest' });
    expect(latest.agent).toEqual({ name: 'writer', version: 2 });
    const out = async (id: string) => (await stack.waitForRun(id)).output?.content;
    expect(await out(early.id)).toBe('system=You are writer v1. model=scripted');
    expect(await out(pinned.id)).toBe('system=You are writer v1. model=scripted');
    expect(await out(latest.id)).toBe('system=You are writer v2. model=scripted');
    expect((await stack.getJson(`/v1/runs/${pinned.id}`)).agent).toEqual({ name: 'writer', version: 1 });
  });

  it("take each of the agent's fields the request does not give; metadata keys merge, the request's winning", async () => {
    await put('analyst', {
      instructions: 'Analyse.',
      model: 'model-analyst',
      max_depth: 3,
      metadata: { team: 'data', level: 1 },
    });
    const taken = await stack.createRun({ agent: 'analyst', input: 'one', metadata: { level: 2 } });
    expect(taken).toMatchObject({ model: 'model-analyst', max_depth: 3, metadata: { team: 'data', level: 2 } });
    expect((await stack.waitForRun(taken.id)).output?.content).toBe('system=Analyse. model=model-analyst');

    const overridden = await stack.createRun({
      agent: 'analyst',
      input: 'two',
      instructions: 'Summarise.',
      model: 'model-request',
      max_depth: 5,
    });
    expect(overridden).toMatchObject({ model: 'model-request', max_depth: 5 });
    expect((await stack.waitForRun(overridden.id)).output?.content).toBe('system=Summarise. model=model-request');
  });

  it('naming an unknown agent or version is a 404 agent_not_found; a malformed one a 400', async () => {
    for (const agent of ['nobody', 'writer@9']) {
      const res = await send('POST', '/v1/runs', { agent, input: 'x' });
      expect(res.status, agent).toBe(404);
      expect(await errorOf(res)).toMatchObject({ code: 'agent_not_found', message: expect.stringContaining(agent) });
    }
    const bad = await send('POST', '/v1/runs', { agent: 'writer@0', input: 'x' });
    expect(bad.status).toBe(400);
    expect((await errorOf(bad)).details).toContainEqual(expect.objectContaining({ field: 'agent' }));
    // Another key's agent is no agent of this key's.
    expect((await send('POST', '/v1/runs', { agent: 'writer', input: 'x' }, OTHER)).status).toBe(404);
  });
});

describe('agents from the client and the command line', () => {
  const cli = async (...argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const io: Io = { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } };
    const code = await main(argv, { url: stack.api.url, apiKey: KEY, color: false }, io);
    return { code, stdout, stderr };
  };

  it('puts an agent from a YAML file, lists it, reads a version, and runs it', async () => {
    const file = join(dir, 'poet.yaml');
    writeFileSync(
      file,
      ['description: Writes short poems.', 'model: model-poet', 'instructions: |', '  You write haiku.', ''].join('\n'),
    );
    expect(await cli('agents', 'put', file)).toMatchObject({ code: 0, stdout: 'poet version 1\n' });
    writeFileSync(join(dir, 'poet.json'), JSON.stringify({ name: 'poet', instructions: 'You write limericks.' }));
    expect((await cli('agents', 'put', join(dir, 'poet.json'))).stdout).toBe('poet version 2\n');
    const ls = await cli('agents', 'ls');
    expect(ls.stdout).toMatch(/^NAME\s+VERSION\s+MODEL\s+DESCRIPTION$/m);
    expect(ls.stdout).toMatch(/^poet\s+2\s+-\s*$/m);
    expect(JSON.parse((await cli('agents', 'get', 'poet@1')).stdout)).toMatchObject({
      version: 1,
      instructions: 'You write haiku.\n',
      model: 'model-poet',
    });
    const run = await cli('run', '--agent', 'poet@1', 'a poem');
    expect(run).toMatchObject({ code: 0, stdout: 'system=You write haiku.\n model=model-poet\n' });
    const bad = await cli('agents', 'put', join(dir, 'missing.yaml'));
    expect(bad.code).toBe(64);

    const client = new AgentqClient({ baseUrl: stack.api.url, apiKey: KEY });
    expect((await client.agents.versions('poet')).data.map((a) => a.version)).toEqual([2, 1]);
    await client.agents.delete('poet');
    await expect(client.agents.get('poet')).rejects.toMatchObject({ status: 404, code: 'agent_not_found' });
  });
});

describe('model settings', () => {
  it("reach the provider's request body, merged key by key over the agent's", async () => {
    await put('tuned', { model_settings: { temperature: 0.2, max_tokens: 300, stop: ['END'] } });
    const settings = {
      temperature: 0.7,
      top_p: 0.9,
      seed: 7,
      reasoning_effort: 'low',
      parallel_tool_calls: false,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
    };
    const run = await stack.createRun({ agent: 'tuned', input: 'settings', model_settings: settings });
    await stack.waitForRun(run.id);
    const sent = stack.llm.requests.find((r) => userOf(r) === 'settings');
    expect(sent).toMatchObject({ ...settings, max_tokens: 300, stop: ['END'] });
    // Without tools, parallel_tool_calls is not sent (providers refuse it).
    const bare = await stack.createRun({ input: 'no tools', tools: [], model_settings: { parallel_tool_calls: true } });
    await stack.waitForRun(bare.id);
    expect(stack.llm.requests.find((r) => userOf(r) === 'no tools')).not.toHaveProperty('parallel_tool_calls');
  });

  it('are checked: a bad or unknown setting is a 400 naming it', async () => {
    for (const [model_settings, field] of [
      [{ temperature: 3 }, 'model_settings.temperature'],
      [{ reasoning_effort: 'extreme' }, 'model_settings.reasoning_effort'],
      [{ stop: ['a', 'b', 'c', 'd', 'e'] }, 'model_settings.stop'],
      [{ logit_bias: {} }, 'model_settings.logit_bias'],
    ] as const) {
      const res = await send('POST', '/v1/runs', { input: 'x', model_settings });
      expect(res.status).toBe(400);
      expect((await errorOf(res)).details).toContainEqual(expect.objectContaining({ field }));
    }
  });
});

describe('structured-output repair', () => {
  const response_format = {
    type: 'json_schema',
    json_schema: {
      name: 'count',
      schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
    },
  };
  const steps = async (id: string) => (await stack.getJson(`/v1/runs/${id}/steps`)).data;

  it('sends an answer that fails the schema back with what failed; the second attempt succeeds', async () => {
    const run = await stack.waitForRun((await stack.createRun({ input: 'REPAIR once', response_format })).id);
    expect(run).toMatchObject({ status: 'completed', stop_reason: 'stop', output_parsed: { n: 2 } });
    const [first, second] = await steps(run.id);
    expect(first).toMatchObject({ error: { code: 'invalid_structured_output' } });
    expect(first).not.toHaveProperty('repair');
    expect(second).toMatchObject({ repair: 1 });
    expect(second).not.toHaveProperty('error');
    const told = stack.llm.requests.filter((r) => userOf(r) === 'REPAIR once')[1]!;
    expect(told.messages.at(-1)).toMatchObject({
      role: 'user',
      content: expect.stringContaining('/n must be integer'),
    });
  });

  it('fails the run as before once structured_output_retries are spent, each attempt a step', async () => {
    const body = { input: 'REPAIR never', response_format, structured_output_retries: 2 };
    const run = await stack.waitForRun((await stack.createRun(body)).id);
    expect(run).toMatchObject({ status: 'failed', error: { code: 'invalid_structured_output' } });
    expect((await steps(run.id)).map((s) => [s.repair ?? 0, s.error?.code])).toEqual([
      [0, 'invalid_structured_output'],
      [1, 'invalid_structured_output'],
      [2, 'invalid_structured_output'],
    ]);
    const none = await stack.waitForRun(
      (await stack.createRun({ ...body, input: 'REPAIR none', structured_output_retries: 0 })).id,
    );
    expect(none.status).toBe('failed');
    expect(await steps(none.id)).toHaveLength(1);
  });
});

describe('tool limits', () => {
  it('make calls past a limit error results the model sees, never executions', async () => {
    const before = stack.crm.calls.length;
    const run = await stack.waitForRun(
      (await stack.createRun({ input: 'LIMITS', tool_limits: { crm__search_contacts: 3, '*': 4 } })).id,
    );
    expect(run).toMatchObject({ status: 'completed', output: { content: 'limited' } });
    const steps = (await stack.getJson(`/v1/runs/${run.id}/steps`)).data;
    expect(steps.map((s) => s.tool_calls.map((c) => c.outcome))).toEqual([
      ['ok', 'ok'],
      ['ok', 'refused', 'ok'],
      ['refused'],
      [],
    ]);
    const refusal = steps[1]!.tool_calls[1]!;
    expect(refusal).toMatchObject({ is_error: true, output: expect.stringContaining('at most 3 times in this run') });
    // Only the calls within the limits reached the server (a round's calls run in parallel).
    expect(
      stack.crm.calls
        .slice(before)
        .map((c) => c.tool)
        .sort(),
    ).toEqual(['get_contact', 'search_contacts', 'search_contacts', 'search_contacts']);
  });
});
