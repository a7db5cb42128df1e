import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Reply } from '@agentq/scripted-llm';
import type { RunObject } from '@agentq/shared/core';
import { round, toolMsgs } from './fixtures/scenarios.js';
import { startStack, type Stack } from './fixtures/services.js';

// Runs are told apart by their system prompt (a saved agent's instructions) or their first user message.
const systemOf = (req: ChatRequest) => String(req.messages.find((m) => m.role === 'system')?.content ?? '');
const userOf = (req: ChatRequest) => String(req.messages.find((m) => m.role === 'user')?.content ?? '');
const lastTool = (req: ChatRequest) => String(toolMsgs(req).at(-1)?.content ?? '');
const call = (name: string, args: object): Reply => ({ tool_calls: [{ name, arguments: args }] });

function handler(req: ChatRequest): Reply {
  const system = systemOf(req);
  const user = userOf(req);
  if (system === 'You are ping.' || system === 'You are pong.')
    return round(req) === 0
      ? call('agent_query', { prompt: 'deeper', agent: system === 'You are ping.' ? 'pong' : 'ping' })
      : { content: `${system} heard: ${lastTool(req)}` };
  if (system === 'You are thrifty.')
    return round(req) === 0
      ? { ...call('crm__search_contacts', { query: 'Bob' }), usage: { prompt_tokens: 80, completion_tokens: 20 } }
      : { content: 'thrifty done' };
  if (system) return { content: `${system}|${req.model}` };
  // Chunks by structure: the README by markdown, the section on its two commands to a sub-agent.
  if (user.startsWith('Section:')) return { content: user };
  if (user === 'PARENT chunks') {
    if (round(req) === 0) return call('context_chunks', { max_chars: 2500, by: 'markdown', name: 'README.md' });
    if (round(req) === 1) {
      const { chunks } = JSON.parse(lastTool(req)) as { chunks: Array<{ id: string; title: string }> };
      const two = chunks.find((c) => c.title === 'agentq > Two commands')!;
      return call('agent_query', { prompt: 'Section:', context_chunk: two.id });
    }
    if (round(req) === 2) return call('context_chunks', { max_chars: 300, by: 'json', name: 'export.json' });
    return { content: JSON.stringify(toolMsgs(req).map((m) => m.content)) };
  }
  if (user === 'PARENT typed')
    return round(req) === 0
      ? call('agent_query_batch', {
          prompts: [
            { prompt: 'analyse the churn', agent: 'analyst' },
            { prompt: 'summarise the churn', agent: 'summarizer' },
            'plain question',
          ],
        })
      : { content: lastTool(req) };
  if (user === 'PARENT refused')
    return round(req) < 2
      ? call('agent_query', { prompt: 'x', agent: round(req) === 0 ? 'outsider' : 'ghost' })
      : { content: JSON.stringify(toolMsgs(req).map((m) => m.content)) };
  if (user === 'PARENT thrifty')
    return round(req) === 0 ? call('agent_query', { prompt: 'go', agent: 'thrifty' }) : { content: 'ok' };
  return { content: `|${req.model}` };
}

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ handler });
  const agents: Array<[string, Record<string, unknown>]> = [
    ['analyst', { description: 'Finds patterns in data.', instructions: 'You analyse.', model: 'model-analyst' }],
    [
      'summarizer',
      { description: 'Writes short summaries.', instructions: 'You summarise.', model: 'model-summarizer' },
    ],
    ['outsider', { instructions: 'You are not listed.' }],
    ['ping', { instructions: 'You are ping.', subagents: { enabled: true, agents: ['pong'], max_nesting: 2 } }],
    ['pong', { instructions: 'You are pong.', subagents: { enabled: true, agents: ['ping'], max_nesting: 5 } }],
    ['thrifty', { instructions: 'You are thrifty.', max_total_tokens: 50, tools: ['crm__*'] }],
  ];
  for (const [name, def] of agents) {
    const res = await stack.request(`/v1/agents/${name}`, { method: 'PUT', json: def });
    expect(res.status).toBe(201);
  }
});
afterAll(async () => stack?.close());

const children = async (id: string) => (await stack.getJson(`/v1/runs/${id}/children`)).data;

describe('sub-agents by type', () => {
  it('offers the allowed agents with their descriptions; each child runs as its agent', async () => {
    const { id } = await stack.createRun({
      input: 'PARENT typed',
      subagents: { enabled: true, agents: ['analyst', 'summarizer'] },
    });
    const run = await stack.waitForRun(id);
    expect(run.status).toBe('completed');
    expect(JSON.parse(run.output!.content as string)).toEqual([
      'You analyse.|model-analyst',
      'You summarise.|model-summarizer',
      '|scripted',
    ]);
    const first = stack.llm.requests.find((r) => userOf(r) === 'PARENT typed')!;
    const query = first.tools!.find((t) => t.function.name === 'agent_query')!.function;
    const agentParam = (query.parameters as { properties: { agent: { enum: string[]; description: string } } })
      .properties.agent;
    expect(agentParam.enum).toEqual(['analyst', 'summarizer']);
    expect(agentParam.description).toContain('analyst: Finds patterns in data.');
    expect(query.description).toContain('summarizer: Writes short summaries.');
    const kids = await children(id);
    expect(kids.map((c) => c.agent)).toEqual([
      { name: 'analyst', version: 1 },
      { name: 'summarizer', version: 1 },
      null,
    ]);
    expect(kids.map((c) => c.model)).toEqual(['model-analyst', 'model-summarizer', 'scripted']);
  });

  it('an agent not listed, or listed and not saved, is an error result the model reads', async () => {
    const { id } = await stack.createRun({
      input: 'PARENT refused',
      subagents: { enabled: true, agents: ['analyst', 'ghost'] },
    });
    const run = await stack.waitForRun(id);
    const [notListed, notSaved] = JSON.parse(run.output!.content as string) as string[];
    expect(notListed).toMatch(/may not start the agent "outsider" \(it may start: analyst, ghost\)/);
    expect(notSaved).toMatch(/no agent "ghost" is saved/);
    expect(await children(id)).toEqual([]);
  });

  it('agents that call each other stop at the max_nesting of the first', async () => {
    const { id } = await stack.createRun({ agent: 'ping', input: 'start' });
    const run = await stack.waitForRun(id);
    expect(run.status).toBe('completed');
    const chain: RunObject[] = [];
    for (let at = id; ; ) {
      const kids = await children(at);
      if (!kids.length) break;
      chain.push(...kids);
      at = kids[0]!.id;
    }
    expect(chain.map((c) => c.agent?.name)).toEqual(['pong', 'ping']);
    // The deepest (nesting 2) was refused a third level, and said so up the chain.
    expect(chain[1]!.output?.content).toMatch(/^You are ping\. heard: .*nest at most 2 levels/);
    expect(run.output?.content).toMatch(/^You are ping\. heard: You are pong\. heard: You are ping\./);
  });

  it("a child takes its agent's own token budget, within the tree's", async () => {
    const { id } = await stack.createRun({
      input: 'PARENT thrifty',
      subagents: { enabled: true, agents: ['thrifty'] },
    });
    expect((await stack.waitForRun(id)).status).toBe('completed');
    const [child] = await children(id);
    expect(child).toMatchObject({ status: 'completed', stop_reason: 'max_total_tokens' });
    expect(child!.output?.content).toBe('thrifty done');
  });
});

describe('context_chunks by structure', () => {
  it('gives a sub-agent a whole markdown section of a real README; JSON by its top-level items', async () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const exported = JSON.stringify({ contacts: [{ id: 'c1', name: 'Bob' }], count: 1, exported_at: '2026-11-28' });
    const { id } = await stack.createRun({
      input: 'PARENT chunks',
      subagents: { enabled: true },
      context: [
        { name: 'README.md', text: readme },
        { name: 'export.json', text: exported },
      ],
    });
    const run = await stack.waitForRun(id);
    expect(run.status).toBe('completed');
    const [markdown, section, json] = JSON.parse(run.output!.content as string) as string[];
    const titles = (JSON.parse(markdown!) as { chunks: Array<{ title: string }> }).chunks.map((c) => c.title);
    expect(titles).toContain('agentq > Two commands');
    // The sub-agent got the section whole, from its heading to the next one.
    const start = readme.indexOf('## Two commands');
    const whole = readme.slice(start, readme.indexOf('\n## ', start + 1) + 1);
    expect(section).toContain(whole);
    expect(JSON.parse(json!).chunks.map((c: { title: string }) => c.title)).toEqual(['contacts … exported_at']);
  });
});
