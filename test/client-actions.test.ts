import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActionResolvedError, AgentqApiError, AgentqClient, type ActionItem, type InboxItem, type Run } from '@agentq/client';
import type { ChatRequest, Handler, Reply, ToolCallReply } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// The client's and the CLI's side of runs that wait: list the requests, answer them, lose a race.

const firstUser = (req: ChatRequest) => (req.messages.find((m: any) => m.role === 'user')?.content as string) ?? '';
const round = (req: ChatRequest) => req.messages.filter((m: any) => m.role === 'assistant').length;
const toolMessages = (req: ChatRequest) => req.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content as string);
/** A model that makes `calls` in its first step, then answers with the tool messages it got (as JSON). */
const callsThenEcho = (calls: ToolCallReply['tool_calls']) => (req: ChatRequest): Reply => (round(req) === 0 ? { tool_calls: calls } : { content: JSON.stringify(toolMessages(req)) });

// Each scenario matches on the start of the first user message; the rest of it names the call.
const rest = (req: ChatRequest, prefix: string) => firstUser(req).slice(prefix.length).trim();
const scenarios: Array<[string, (req: ChatRequest) => Reply]> = [
  ['WRITE', (req) => callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: rest(req, 'WRITE') } }])(req)],
  ['UPDATE', (req) => callsThenEcho([{ name: 'crm__update_contact', arguments: { id: 'c2', company: rest(req, 'UPDATE') } }])(req)],
  ['ASK', (req) => callsThenEcho([{ name: 'ask_human', arguments: { question: rest(req, 'ASK'), choices: ['Sales', 'IT'] } }])(req)],
  ['LOCATE', callsThenEcho([{ name: 'get_location', arguments: { precise: true } }])],
  ['DELEGATE', (req) => (round(req) === 0 ? { tool_calls: [{ name: 'agent_query', arguments: { prompt: `WRITE ${rest(req, 'DELEGATE')}` } }] } : { content: `child: ${toolMessages(req)[0]}` })],
];
const handler: Handler = (req) => scenarios.find(([p]) => firstUser(req).startsWith(p))?.[1](req) ?? { content: 'no scenario' };

const KEY = 'client-actions-key';
/** A key of its own for the inbox tests: its inbox holds only what they create. */
const INBOX_KEY = 'client-inbox-key';
const gated = { approval: { tools: ['crm__non_idempotent_write', 'crm__update_contact'] } };
const locationTool = { type: 'function' as const, function: { name: 'get_location', description: "The user's city", parameters: { type: 'object', properties: { precise: { type: 'boolean' } } } } };

let stack: Stack;
let client: AgentqClient;
let inboxClient: AgentqClient;

beforeAll(async () => {
  stack = await startStack({ handler, apiKey: KEY, env: { API_KEYS: `${KEY},${INBOX_KEY}` } });
  client = new AgentqClient({ baseUrl: stack.api.url, apiKey: KEY });
  inboxClient = new AgentqClient({ baseUrl: stack.api.url, apiKey: INBOX_KEY });
});
afterAll(async () => stack?.close());

/** Waits until the run waits for `count` answers, and returns it. */
const waiting = (c: AgentqClient, id: string, count = 1) =>
  waitFor(
    async () => {
      const run = await c.getRun(id);
      return run.status === 'requires_action' && run.required_action?.items.length === count ? run : undefined;
    },
    { what: `run ${id} to wait for ${count} answer(s)` },
  );
const writes = (key: string) => stack.crm.calls.filter((c) => c.tool === 'non_idempotent_write' && c.args?.key === key);
const toolMessagesOf = (run: Run) => JSON.parse(run.output!.content as string) as string[];

describe('AgentqClient: requests for an answer', () => {
  it('shows a waiting request on the run and in the inbox, approves it, and lists it resolved', async () => {
    const created = await inboxClient.createRun({ input: 'WRITE approve-me', ...gated });
    const run = await waiting(inboxClient, created.id);
    const [item] = run.required_action!.items;
    expect(item).toEqual<ActionItem>({
      id: expect.stringMatching(new RegExp(`^act_${run.id.slice(4)}_0_0$`)),
      type: 'approval',
      run_id: run.id,
      tool_call_id: expect.any(String),
      name: 'crm__non_idempotent_write',
      arguments: '{"key":"approve-me"}',
      created_at: expect.any(String),
      expires_at: null,
    });
    const pending = await inboxClient.listActions({ status: 'pending' });
    expect(pending).toEqual({ data: [{ ...item, status: 'pending' }], next: null });
    expect(writes('approve-me')).toEqual([]);

    const answered = await inboxClient.approve(run.id, item.id);
    expect(answered.id).toBe(run.id);
    const done = await inboxClient.waitForRun(run.id, { timeoutMs: 20_000 });
    expect(done.status).toBe('completed');
    expect(writes('approve-me')).toHaveLength(1);
    const resolved = await inboxClient.listActions({ status: 'resolved' });
    expect(resolved.data).toEqual([{ ...item, status: 'resolved', decision: 'approved', resolved_at: expect.any(String) }]);
    expect((await inboxClient.listActions({ status: 'pending' })).data).toEqual([]);
    const [step] = await inboxClient.getSteps(run.id);
    expect(step.tool_calls[0].approval).toMatchObject({ id: item.id, type: 'approval', decision: 'approved' });
  });

  it('pages through the inbox, newest first, and answers questions', async () => {
    const ids: string[] = [];
    for (const q of ['Which Bob?', 'Which Alice?', 'Which Carol?']) {
      const created = await inboxClient.createRun({ input: `ASK ${q}`, human_input: true });
      await waiting(inboxClient, created.id);
      ids.push(created.id);
    }
    const first = await inboxClient.listActions({ status: 'pending', limit: 2 });
    expect(first.data.map((i) => i.run_id)).toEqual([ids[2], ids[1]]);
    expect(first.data[0]).toMatchObject({ type: 'input', question: 'Which Carol?', choices: ['Sales', 'IT'], status: 'pending' });
    expect(first.next).toBe(first.data[1].id);
    const second = await inboxClient.listActions({ status: 'pending', limit: 2, after: first.next! });
    expect(second).toEqual({ data: [expect.objectContaining({ run_id: ids[0] })], next: null });

    const all: InboxItem[] = [];
    for await (const i of inboxClient.listAllActions({ status: 'pending', limit: 1 })) all.push(i);
    expect(all.map((i) => i.run_id)).toEqual([...ids].reverse());

    for (const [n, i] of all.entries()) await inboxClient.answer(i.run_id, i.id, `answer ${n}`);
    const done = await Promise.all(ids.map((id) => inboxClient.waitForRun(id, { timeoutMs: 20_000 })));
    expect(done.map(toolMessagesOf)).toEqual([['answer 2'], ['answer 1'], ['answer 0']]);
  });

  it('rejects a call with a reason: it never runs and the model reads why', async () => {
    const created = await client.createRun({ input: 'WRITE reject-me', ...gated });
    const [item] = (await waiting(client, created.id)).required_action!.items;
    await client.reject(created.id, item.id, 'wrong customer');
    const done = await client.waitForRun(created.id, { timeoutMs: 20_000 });
    expect(toolMessagesOf(done)).toEqual(['The user rejected this call: wrong customer']);
    expect(writes('reject-me')).toEqual([]);
  });

  it('approves with edited arguments, and reports an edit that does not fit the schema as a 400 naming the field', async () => {
    const created = await client.createRun({ input: 'UPDATE Wrong Co', ...gated });
    const [item] = (await waiting(client, created.id)).required_action!.items;
    const bad = await client.approve(created.id, item.id, { arguments: { id: 'c2', company: 7 } }).catch((e) => e);
    expect(bad).toBeInstanceOf(AgentqApiError);
    expect(bad).not.toBeInstanceOf(ActionResolvedError);
    expect(bad).toMatchObject({ status: 400, code: 'validation_error' });
    expect(bad.details).toEqual([{ field: 'responses.0.arguments', message: expect.stringContaining('/company must be string') }]);
    // Arguments as JSON text go as they are.
    await client.approve(created.id, item.id, { arguments: '{"id":"c2","company":"EPAM"}' });
    await client.waitForRun(created.id, { timeoutMs: 20_000 });
    const updates = stack.crm.calls.filter((c) => c.tool === 'update_contact' && c.args?.id === 'c2');
    expect(updates.map((c) => c.args.company)).toEqual(['EPAM']);
  });

  it("gives a client tool's call the output the caller submits", async () => {
    const created = await client.createRun({ input: 'LOCATE', client_tools: [locationTool] });
    const [item] = (await waiting(client, created.id)).required_action!.items;
    expect(item).toMatchObject({ type: 'client_tool', name: 'get_location', arguments: '{"precise":true}' });
    // An answer of the wrong kind is a 400 that says which kind it takes.
    const wrong = await client.answer(created.id, item.id, 'Berlin').catch((e) => e);
    expect(wrong).toMatchObject({ status: 400, message: expect.stringContaining('answer with "output"') });
    await client.submitToolOutput(created.id, item.id, 'Berlin');
    expect(toolMessagesOf(await client.waitForRun(created.id, { timeoutMs: 20_000 }))).toEqual(['Berlin']);
  });

  it('lets exactly one of two racing answers win; the loser gets ActionResolvedError (409 action_resolved) saying how it was decided', async () => {
    const created = await client.createRun({ input: 'WRITE race-me', ...gated });
    const [item] = (await waiting(client, created.id)).required_action!.items;
    const other = new AgentqClient({ baseUrl: stack.api.url, apiKey: KEY });
    const results = await Promise.allSettled([client.approve(created.id, item.id), other.reject(created.id, item.id, 'too late?')]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    const err = lost[0].reason;
    expect(err).toBeInstanceOf(ActionResolvedError);
    expect(err).toBeInstanceOf(AgentqApiError);
    expect(err).toMatchObject({ status: 409, code: 'action_resolved' });
    const winner = results[0].status === 'fulfilled' ? 'approved' : 'rejected';
    expect(err.resolved).toEqual([{ id: item.id, decision: winner, at: expect.any(String) }]);

    const done = await client.waitForRun(created.id, { timeoutMs: 20_000 });
    expect(writes('race-me')).toHaveLength(winner === 'approved' ? 1 : 0);
    // Once decided, every later answer is refused the same way.
    const late = await client.approve(created.id, item.id).catch((e) => e);
    expect(late).toBeInstanceOf(ActionResolvedError);
    expect(late.resolved[0]).toMatchObject({ id: item.id, decision: winner });
    expect(done.status).toBe('completed');
  });

  it("answers a sub-run's request on the sub-run itself as well as on the root", async () => {
    const created = await client.createRun({ input: 'DELEGATE child-write', subagents: { enabled: true }, ...gated });
    const [item] = (await waiting(client, created.id)).required_action!.items;
    expect(item.run_id).not.toBe(created.id);
    const child = await client.getRun(item.run_id);
    expect(child).toMatchObject({ status: 'requires_action', parent_run_id: created.id, required_action: { items: [expect.objectContaining({ id: item.id })] } });
    const answered = await client.approve(item.run_id, item.id);
    expect(answered.id).toBe(item.run_id);
    const done = await client.waitForRun(created.id, { timeoutMs: 20_000 });
    expect(done.output?.content).toMatch(/^child: /);
    expect(writes('child-write')).toHaveLength(1);
  });
});
