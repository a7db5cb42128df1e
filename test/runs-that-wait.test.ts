import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookPayload } from '@agentq/client';
import type { RunObject } from '@agentq/shared/core';
import { bodyOf, errorOf, type GetBody } from './fixtures/api-client.js';
import { callsThenEcho, round, scenarioModel, toolMsgs } from './fixtures/scenarios.js';
import { startStack, type Stack } from './fixtures/services.js';
import { readSse, type SseEvent } from './fixtures/sse.js';
import { waitFor } from './fixtures/wait.js';

// Scenarios match on the start of the first user message (a sub-run's is its prompt).
const { handler, on } = scenarioModel();

let stack: Stack;
beforeAll(async () => {
  receiver = await startReceiver();
  // A waiting call's job wakes every second here (ACTION_PARK_MAX_MS), finds no answer and parks again.
  stack = await startStack({
    handler,
    apiKey: 'key-a-123456',
    env: { API_KEYS: 'key-a-123456,key-b-123456', ACTION_PARK_MAX_MS: '1000', WEBHOOK_ALLOW_PRIVATE: 'true' },
  });
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
});

/** A webhook receiver on loopback that keeps what it is sent. */
async function startReceiver() {
  const received: WebhookPayload[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push(JSON.parse(body));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
let receiver: Awaited<ReturnType<typeof startReceiver>>;

const json = async <P extends string>(path: P, key?: string): Promise<GetBody<P>> =>
  bodyOf(await stack.request(path, { key }));
const respond = (runId: string, responses: unknown[], key?: string) =>
  stack.request(`/v1/runs/${runId}/actions`, { method: 'POST', json: { responses }, key });
/** A run that waits, and what for. */
type WaitingRun = RunObject & Required<Pick<RunObject, 'required_action'>>;
const isWaiting = (run: RunObject): run is WaitingRun =>
  run.status === 'requires_action' && run.required_action !== undefined;
/** Waits until the run waits, and returns it (with its required_action). */
const waiting = (id: string, count = 1) =>
  waitFor(
    async () => {
      const run = await json(`/v1/runs/${id}`);
      return isWaiting(run) && run.required_action.items.length === count ? run : undefined;
    },
    { what: `run ${id} to wait for ${count} answers` },
  );
/** A run's events (to its end, or to the first for which `stopAfter` holds). */
const runEvents = async (id: string, stopAfter?: (e: SseEvent) => boolean) =>
  readSse(await stack.request(`/v1/runs/${id}/events`), { stopAfter });
const crmCalls = (tool: string) => stack.crm.calls.filter((c) => c.tool === tool);

describe('tool approvals', () => {
  it('runs the ungated call of a round at once, holds the gated one until approved, then runs it', async () => {
    on(
      'APPROVE one',
      callsThenEcho([
        { name: 'crm__search_contacts', arguments: { query: 'Bob' } },
        { name: 'crm__update_contact', arguments: { id: 'c1', company: 'Initech' } },
      ]),
    );
    const { id } = await stack.createRun({ input: 'APPROVE one', approval: { tools: ['crm__update_*'] } });
    const run = await waiting(id);
    const [item] = run.required_action.items;
    expect(item).toMatchObject({
      type: 'approval',
      run_id: id,
      name: 'crm__update_contact',
      arguments: '{"id":"c1","company":"Initech"}',
      expires_at: null,
    });
    expect(item.id).toMatch(/^act_/);
    // The read-only search ran while the update waits; the update has not reached the server.
    await waitFor(() => crmCalls('search_contacts').some((c) => c.args.query === 'Bob'), { what: 'the search to run' });
    expect(crmCalls('update_contact').filter((c) => c.args.company === 'Initech')).toHaveLength(0);
    const steps = (await json(`/v1/runs/${id}/steps`)).data;
    expect(steps[0].tool_calls[1]).toMatchObject({
      status: 'requires_action',
      approval: { id: item.id, type: 'approval', decision: 'pending' },
    });

    const res = await respond(id, [{ id: item.id, approve: true }]);
    expect(res.status).toBe(200);
    expect((await bodyOf<RunObject>(res)).id).toBe(id);
    const done = await stack.waitForRun(id);
    expect(done.status).toBe('completed');
    const [search, update] = JSON.parse(done.output!.content as string);
    expect(JSON.parse(search)[0].name).toBe('Bob Smith');
    expect(JSON.parse(update)).toMatchObject({ id: 'c1', company: 'Initech' });
    // Order of events: the ungated call completed before anyone approved.
    const events = await runEvents(id);
    const at = (pred: (e: SseEvent) => boolean) => events.findIndex(pred);
    const required = at((e) => e.event === 'action.required');
    const searchDone = at((e) => e.event === 'tool.completed' && e.data.name === 'crm__search_contacts');
    const resolved = at((e) => e.event === 'action.resolved');
    const updateStarted = at((e) => e.event === 'tool.started' && e.data.name === 'crm__update_contact');
    expect(required).toBeGreaterThan(-1);
    expect(searchDone).toBeGreaterThan(-1);
    expect(searchDone).toBeLessThan(resolved);
    expect(resolved).toBeLessThan(updateStarted);
    expect(events[required]).toMatchObject({ data: { items: [expect.objectContaining({ id: item.id })] } });
    expect(events[resolved].data).toMatchObject({ id: item.id, decision: 'approved' });
    const recorded = (await json(`/v1/runs/${id}/steps`)).data[0].tool_calls[1];
    expect(recorded).toMatchObject({
      status: 'completed',
      approval: { decision: 'approved', by: expect.any(String), at: expect.any(String) },
    });
  });

  it('runs an approval with edited arguments, and refuses edits that do not fit the schema', async () => {
    on('APPROVE edit', callsThenEcho([{ name: 'crm__update_contact', arguments: { id: 'c2', company: 'Wrong Co' } }]));
    const { id } = await stack.createRun({ input: 'APPROVE edit', approval: { tools: ['crm__update_contact'] } });
    const [item] = (await waiting(id)).required_action.items;
    const bad = await respond(id, [{ id: item.id, approve: true, arguments: '{"id":"c2","company":7}' }]);
    expect(bad.status).toBe(400);
    const err = await errorOf(bad);
    expect(err.message).toMatch(
      /^responses\.0\.arguments: do not fit the input schema of crm__update_contact: \/company must be string/,
    );
    expect(err.details).toEqual([
      { field: 'responses.0.arguments', message: expect.stringContaining('/company must be string') },
    ]);
    const notJson = await respond(id, [{ id: item.id, approve: true, arguments: '{"id":' }]);
    expect(notJson.status).toBe(400);
    // Nothing was stored by the refused answers: the item still waits.
    expect((await json(`/v1/runs/${id}`)).required_action?.items.map((i) => i.id)).toEqual([item.id]);

    expect(
      (await respond(id, [{ id: item.id, approve: true, arguments: '{"id":"c2","company":"EPAM"}' }])).status,
    ).toBe(200);
    const done = await stack.waitForRun(id);
    const updates = crmCalls('update_contact').filter((c) => c.args.id === 'c2');
    expect(updates.map((c) => c.args.company)).toEqual(['EPAM']);
    const [msg] = JSON.parse(done.output!.content as string);
    expect(msg).toContain(
      'The user edited the arguments before the call ran; it ran with {"id":"c2","company":"EPAM"}',
    );
    const step = (await json(`/v1/runs/${id}/steps`)).data[0].tool_calls[0];
    expect(step.approval).toMatchObject({ decision: 'approved', arguments: '{"id":"c2","company":"EPAM"}' });
  });

  it('never runs a rejected call, and tells the model why', async () => {
    on('REJECT', callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: 'rejected-write' } }]));
    const { id } = await stack.createRun({ input: 'REJECT', approval: { destructive: true } });
    const [item] = (await waiting(id)).required_action.items;
    expect(item.name).toBe('crm__non_idempotent_write');
    expect((await respond(id, [{ id: item.id, approve: false, reason: 'wrong customer' }])).status).toBe(200);
    const done = await stack.waitForRun(id);
    expect(JSON.parse(done.output!.content as string)).toEqual(['The user rejected this call: wrong customer']);
    expect(stack.crm.calls.filter((c) => c.args?.key === 'rejected-write')).toEqual([]);
    const step = (await json(`/v1/runs/${id}/steps`)).data[0].tool_calls[0];
    expect(step).toMatchObject({
      outcome: 'rejected',
      is_error: true,
      approval: { decision: 'rejected', reason: 'wrong customer' },
    });
    // Answered once: a second answer is a 409.
    const again = await respond(id, [{ id: item.id, approve: true }]);
    expect(again.status).toBe(409);
    expect((await errorOf(again)).code).toBe('action_resolved');
  });

  it('gates under destructive only the tools not marked read-only', async () => {
    on(
      'DESTRUCTIVE',
      callsThenEcho([
        { name: 'crm__get_contact', arguments: { id: 'c1' } },
        { name: 'crm__count_calls', arguments: {} },
      ]),
    );
    const { id } = await stack.createRun({ input: 'DESTRUCTIVE', approval: { destructive: true } });
    const [item] = (await waiting(id)).required_action.items;
    // get_contact is readOnlyHint: true; count_calls has no annotations, so it may have effects.
    expect(item.name).toBe('crm__count_calls');
    expect((await respond(id, [{ id: item.id, approve: true }])).status).toBe(200);
    expect((await stack.waitForRun(id)).status).toBe('completed');
  });

  it('expires a request under "reject": the model is told no one approved in time', async () => {
    on('EXPIRE reject', callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: 'expired-write' } }]));
    const { id } = await stack.createRun({
      input: 'EXPIRE reject',
      approval: { tools: ['crm__non_idempotent_write'], timeout_ms: 300 },
    });
    const [item] = (await waiting(id)).required_action.items;
    expect(Date.parse(item.expires_at!) - Date.parse(item.created_at)).toBe(300);
    const done = await stack.waitForRun(id);
    expect(done.status).toBe('completed');
    expect(JSON.parse(done.output!.content as string)).toEqual([
      'Error executing crm__non_idempotent_write: no one approved this call in time',
    ]);
    expect(stack.crm.calls.filter((c) => c.args?.key === 'expired-write')).toEqual([]);
    expect((await json(`/v1/runs/${id}/steps`)).data[0].tool_calls[0].approval).toMatchObject({
      decision: 'expired',
      by: 'agentq',
    });
    expect((await respond(id, [{ id: item.id, approve: true }])).status).toBe(409);
  });

  it('expires a request under "stop": the run ends incomplete with approval_timeout', async () => {
    on('EXPIRE stop', callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: 'stopped-write' } }]));
    const { id } = await stack.createRun({
      input: 'EXPIRE stop',
      approval: { tools: ['crm__non_idempotent_write'], timeout_ms: 300, on_timeout: 'stop' },
    });
    await waiting(id);
    const done = await stack.waitForRun(id);
    expect(done).toMatchObject({ status: 'incomplete', stop_reason: 'approval_timeout' });
    expect(stack.crm.calls.filter((c) => c.args?.key === 'stopped-write')).toEqual([]);
  });
});

describe('a run that ends on an expiry', () => {
  it('under "stop" takes its sub-runs still at work with it', async () => {
    on('Slow child', () => ({ content: 'child done', delayMs: 5000 }));
    on(
      'EXPIRE tree',
      callsThenEcho([
        { name: 'crm__non_idempotent_write', arguments: { key: 'tree-write' } },
        { name: 'agent_query', arguments: { prompt: 'Slow child' } },
      ]),
    );
    const { id } = await stack.createRun({
      input: 'EXPIRE tree',
      subagents: { enabled: true },
      approval: { tools: ['crm__non_idempotent_write'], timeout_ms: 500, on_timeout: 'stop' },
    });
    const child = await waitFor(async () => (await json(`/v1/runs/${id}/children`)).data[0], {
      what: 'the sub-run to start',
    });
    const done = await stack.waitForRun(id);
    expect(done).toMatchObject({ status: 'incomplete', stop_reason: 'approval_timeout' });
    // The sub-run, its model call still in flight when its parent ended, ends too.
    expect(await stack.waitForRun(child.id, { timeoutMs: 3_000 })).toMatchObject({ status: 'cancelled' });
    expect(stack.crm.calls.filter((c) => c.args?.key === 'tree-write')).toEqual([]);
  });
});

describe('late answers', () => {
  it(
    'an answer after the request expired is too late, ' +
      'even before its job woke to expire it: 409 expired, the call never runs',
    async () => {
      on('LATE approval', callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: 'late-write' } }]));
      const { id } = await stack.createRun({
        input: 'LATE approval',
        approval: { tools: ['crm__non_idempotent_write'], timeout_ms: 1500, on_timeout: 'stop' },
      });
      const [item] = (await waiting(id)).required_action.items;
      // The tool queue is busy: the request's job does not wake when the request expires.
      const release = await stack.holdToolQueue();
      try {
        await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(item.expires_at!) + 100 - Date.now())));
        const late = await respond(id, [{ id: item.id, approve: true }]);
        expect(late.status).toBe(409);
        expect(await late.json()).toMatchObject({
          error: { code: 'action_resolved', details: [{ id: item.id, decision: 'expired' }] },
        });
      } finally {
        await release();
      }
      const done = await stack.waitForRun(id);
      expect(done).toMatchObject({ status: 'incomplete', stop_reason: 'approval_timeout' });
      expect(stack.crm.calls.filter((c) => c.args?.key === 'late-write')).toEqual([]);
    },
  );
});

describe('client tools and questions', () => {
  it('offers a client tool, waits for its output and gives it to the model', async () => {
    let offered: string[] = [];
    on('CLIENT', (req) => {
      offered = (req.tools ?? []).map((t) => t.function.name);
      return callsThenEcho([{ name: 'get_location', arguments: {} }])(req);
    });
    const { id } = await stack.createRun({
      input: 'CLIENT',
      client_tools: [
        {
          type: 'function',
          function: {
            name: 'get_location',
            description: "The user's city",
            parameters: { type: 'object', properties: {} },
          },
        },
      ],
    });
    const [item] = (await waiting(id)).required_action.items;
    expect(offered).toContain('get_location');
    expect(item).toMatchObject({ type: 'client_tool', name: 'get_location', arguments: '{}' });
    const wrongKind = await respond(id, [{ id: item.id, approve: true }]);
    expect(wrongKind.status).toBe(400);
    expect((await errorOf(wrongKind)).message).toMatch(
      /waits for the output of the client tool get_location: answer with "output"/,
    );
    expect((await respond(id, [{ id: item.id, output: 'Berlin' }])).status).toBe(200);
    const done = await stack.waitForRun(id);
    expect(JSON.parse(done.output!.content as string)).toEqual(['Berlin']);
  });

  it('asks the user a question with ask_human and gives the model the answer', async () => {
    on(
      'QUESTION',
      callsThenEcho([{ name: 'ask_human', arguments: { question: 'Which Bob?', choices: ['Sales', 'IT'] } }]),
    );
    const { id } = await stack.createRun({ input: 'QUESTION', human_input: true });
    const [item] = (await waiting(id)).required_action.items;
    expect(item).toMatchObject({ type: 'input', question: 'Which Bob?', choices: ['Sales', 'IT'] });
    expect((await respond(id, [{ id: item.id, answer: 'the one in Sales' }])).status).toBe(200);
    const done = await stack.waitForRun(id);
    expect(JSON.parse(done.output!.content as string)).toEqual(['the one in Sales']);
  });

  it("shows a sub-run's request on its root, where it is answered", async () => {
    on('CHILD approve', callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: 'child-write' } }]));
    on('PARENT of approval', (req) =>
      round(req) === 0
        ? { tool_calls: [{ name: 'agent_query', arguments: { prompt: 'CHILD approve' } }] }
        : { content: `child said ${toolMsgs(req)[0].content}` },
    );
    const { id } = await stack.createRun({
      input: 'PARENT of approval',
      subagents: { enabled: true },
      approval: { tools: ['crm__non_idempotent_write'] },
    });
    const root = await waiting(id);
    const [item] = root.required_action.items;
    const [child] = (await json(`/v1/runs/${id}/children`)).data;
    expect(item.run_id).toBe(child.id);
    expect(child.status).toBe('requires_action');
    // The root's stream tells of it too.
    const told = await runEvents(id, (e) => e.event === 'action.required');
    expect(told.at(-1)).toMatchObject({
      event: 'action.required',
      data: { items: [expect.objectContaining({ id: item.id, run_id: child.id })] },
    });
    expect((await respond(id, [{ id: item.id, approve: true }])).status).toBe(200);
    const done = await stack.waitForRun(id);
    expect(done.status).toBe('completed');
    expect(done.output!.content).toMatch(/^child said \["\[\\"child-write\\"/);
    expect(stack.crm.calls.filter((c) => c.args?.key === 'child-write')).toHaveLength(1);
  });
});

describe('waiting', () => {
  it("waits past its job's longest park (the job wakes, finds no answer, parks again), then runs once when approved", async () => {
    on('LONG wait', callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: 'long-wait' } }]));
    const { id } = await stack.createRun({ input: 'LONG wait', approval: { tools: ['crm__non_idempotent_write'] } });
    const [item] = (await waiting(id)).required_action.items;
    // Parked for 1 s at a time: after 2.5 s it has woken twice and is parked again.
    await new Promise((r) => setTimeout(r, 2500));
    expect(await stack.toolJobState(id, 0, 0)).toBe('delayed');
    expect((await json(`/v1/runs/${id}`)).status).toBe('requires_action');
    expect(stack.crm.calls.filter((c) => c.args?.key === 'long-wait')).toEqual([]);
    expect((await respond(id, [{ id: item.id, approve: true }])).status).toBe(200);
    const done = await stack.waitForRun(id);
    expect(JSON.parse(JSON.parse(done.output!.content as string)[0])).toContain('long-wait');
    expect(stack.crm.calls.filter((c) => c.args?.key === 'long-wait')).toHaveLength(1);
  });

  it("counts the wait against the run's timeout_ms: at the deadline the call is not run and the run ends on its budget", async () => {
    on('DEADLINE wait', callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: 'deadline-write' } }]));
    const { id } = await stack.createRun({
      input: 'DEADLINE wait',
      timeout_ms: 600,
      on_budget_exhausted: 'stop',
      approval: { tools: ['crm__non_idempotent_write'] },
    });
    const run = await waiting(id);
    const [item] = run.required_action.items;
    // With no timeout of its own, the request expires with the run (its deadline is fixed as the
    // request is read, a moment before the run is stored).
    const ahead = Date.parse(run.created_at) + 600 - Date.parse(item.expires_at!);
    expect(ahead).toBeGreaterThanOrEqual(0);
    expect(ahead).toBeLessThan(50);
    const done = await stack.waitForRun(id);
    expect(done).toMatchObject({ status: 'incomplete', stop_reason: 'timeout' });
    expect(stack.crm.calls.filter((c) => c.args?.key === 'deadline-write')).toEqual([]);
  });

  it("tells the root's webhook (run.requires_action) when a run of its tree starts waiting, with what it waits for", async () => {
    on('HOOKED', callsThenEcho([{ name: 'ask_human', arguments: { question: 'Hooked?' } }]));
    const { id } = await stack.createRun({
      input: 'HOOKED',
      human_input: true,
      webhook: { url: receiver.url, secret: 'hook-secret' },
    });
    const hook = await waitFor(
      () => receiver.received.find((r) => r.type === 'run.requires_action' && r.data.id === id),
      { what: 'the run.requires_action webhook' },
    );
    expect(hook.data).toMatchObject({
      status: 'requires_action',
      required_action: { items: [expect.objectContaining({ type: 'input', question: 'Hooked?' })] },
    });
    const [item] = hook.data.required_action!.items;
    expect((await respond(id, [{ id: item.id, answer: 'yes' }])).status).toBe(200);
    await waitFor(() => receiver.received.find((r) => r.type === 'run.completed' && r.data.id === id), {
      what: 'the run.completed webhook',
    });
    expect(receiver.received.filter((r) => r.data.id === id).map((r) => r.type)).toEqual([
      'run.requires_action',
      'run.completed',
    ]);
  });
});

describe('answers', () => {
  it("hides another tenant's request (404) and cancels what waits with the run", async () => {
    on('CANCEL waiting', callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: 'cancelled-write' } }]));
    const { id } = await stack.createRun({
      input: 'CANCEL waiting',
      approval: { tools: ['crm__non_idempotent_write'] },
    });
    const [item] = (await waiting(id)).required_action.items;
    expect((await respond(id, [{ id: item.id, approve: true }], 'key-b-123456')).status).toBe(404);
    expect((await stack.request(`/v1/runs/${id}/cancel`, { method: 'POST' })).status).toBe(202);
    const done = await stack.waitForRun(id);
    expect(done.status).toBe('cancelled');
    const late = await respond(id, [{ id: item.id, approve: true }]);
    expect(late.status).toBe(409);
    expect((await errorOf(late)).details).toEqual([{ id: item.id, decision: 'cancelled', at: expect.any(String) }]);
    expect(stack.crm.calls.filter((c) => c.args?.key === 'cancelled-write')).toEqual([]);
  });

  it("lists a tenant's pending requests newest first, paged, and moves answered ones to resolved", async () => {
    on('INBOX', callsThenEcho([{ name: 'ask_human', arguments: { question: `Q ${Math.random()}` } }]));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { id } = await stack.createRun({ input: `INBOX ${i}`, human_input: true }, 'key-b-123456');
      ids.push(id);
      await waitFor(async () => (await json(`/v1/runs/${id}`, 'key-b-123456')).status === 'requires_action', {
        what: 'the run to wait',
      });
    }
    const page1 = await json('/v1/actions?status=pending&limit=2', 'key-b-123456');
    expect(page1.data.map((a) => a.run_id)).toEqual([ids[2], ids[1]]);
    expect(page1.data[0]).toMatchObject({ status: 'pending', type: 'input' });
    const page2 = await json(`/v1/actions?status=pending&limit=2&after=${page1.next}`, 'key-b-123456');
    expect(page2).toEqual({ data: [expect.objectContaining({ run_id: ids[0] })], next: null });
    // key-a sees none of key-b's.
    expect((await json('/v1/actions?status=pending&limit=100')).data.filter((a) => ids.includes(a.run_id))).toEqual([]);

    const answered = page1.data[1];
    expect((await respond(answered.run_id, [{ id: answered.id, answer: 'yes' }], 'key-b-123456')).status).toBe(200);
    const pending = await json('/v1/actions?status=pending', 'key-b-123456');
    expect(pending.data.map((a) => a.run_id)).toEqual([ids[2], ids[0]]);
    const resolved = await json('/v1/actions?status=resolved', 'key-b-123456');
    expect(resolved.data).toEqual([
      expect.objectContaining({
        id: answered.id,
        status: 'resolved',
        decision: 'answered',
        resolved_at: expect.any(String),
      }),
    ]);
    for (const id of [ids[0], ids[2]])
      await stack.request(`/v1/runs/${id}/cancel`, { method: 'POST', key: 'key-b-123456' });
  });

  it('rejects a malformed answer with a 400 naming the field', async () => {
    on('MALFORMED', callsThenEcho([{ name: 'ask_human', arguments: { question: 'Why?' } }]));
    const { id } = await stack.createRun({ input: 'MALFORMED', human_input: true });
    const [item] = (await waiting(id)).required_action.items;
    const both = await respond(id, [{ id: item.id, answer: 'x', output: 'y' }]);
    expect(both.status).toBe(400);
    expect((await errorOf(both)).details?.[0].field).toBe('responses.0.answer');
    const unknown = await respond(id, [{ id: 'act_nope', answer: 'x' }]);
    expect(unknown.status).toBe(404);
    expect((await respond(id, [{ id: item.id, answer: 'because' }])).status).toBe(200);
    expect((await stack.waitForRun(id)).status).toBe('completed');
  });
});

describe('admission while runs wait', () => {
  let small: Stack;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentq-wait-tenants-'));
    writeFileSync(join(dir, 'tenants.json'), JSON.stringify({ default: { max_active_runs: 2 } }));
    small = await startStack({ handler, env: { TENANTS_CONFIG: join(dir, 'tenants.json') } });
  });
  afterAll(async () => small?.close());

  it('a run that waits holds no slot: with max_active_runs 2 and three runs waiting, a fourth still runs', async () => {
    on('SLOT wait', callsThenEcho([{ name: 'ask_human', arguments: { question: 'Slot?' } }]));
    on('SLOT free', () => ({ content: 'ran while three waited' }));
    const waitingIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { id } = await small.createRun({ input: `SLOT wait ${i}`, human_input: true });
      waitingIds.push(id);
      await waitFor(async () => (await small.getJson(`/v1/runs/${id}`)).status === 'requires_action', {
        what: `run ${i} to wait`,
      });
    }
    expect(await small.getJson('/v1/usage')).toMatchObject({ active_runs: 0, waiting_runs: 3, queued_runs: 0 });
    const { id: free } = await small.createRun({ input: 'SLOT free' });
    expect((await small.waitForRun(free)).output!.content).toBe('ran while three waited');
    // Answered, the three go on at once (taking their slots back, even past the limit) and end.
    for (const id of waitingIds) {
      const [item] = (await small.getJson(`/v1/runs/${id}`)).required_action!.items;
      const res = await small.request(`/v1/runs/${id}/actions`, {
        method: 'POST',
        json: { responses: [{ id: item.id, answer: 'ok' }] },
      });
      expect(res.status).toBe(200);
    }
    for (const id of waitingIds) expect((await small.waitForRun(id)).status).toBe('completed');
    expect(await small.getJson('/v1/usage')).toMatchObject({ active_runs: 0, waiting_runs: 0, queued_runs: 0 });
  });
});
