import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler, Reply } from '@agentq/scripted-llm';
import { RunStore } from '@agentq/shared/store';
import { startStack, type Stack } from './fixtures/services.js';

// Each scenario is keyed by the user's text, so one scripted model serves every test here.
const scenarios = new Map<string, (req: ChatRequest, round: number) => Reply>();
const handler: Handler = (req) => {
  const user = req.messages.find((m) => m.role === 'user')?.content as string;
  const round = req.messages.filter((m) => m.role === 'assistant').length;
  const script = scenarios.get(user);
  if (!script) return { content: `no scenario for ${JSON.stringify(user)}` };
  return script(req, round);
};

const toolMessages = (req: ChatRequest) => req.messages.filter((m) => m.role === 'tool');

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ handler, withMemory: true });
});
afterAll(async () => stack?.close());

describe('the durable agent loop', () => {
  it('answers directly when the model calls no tool', async () => {
    scenarios.set('Say hello', () => ({ content: 'Hello there, friend.' }));
    const created = await stack.createRun({ input: 'Say hello', instructions: 'Be brief.', metadata: { ticket: 42 } });
    expect(created.status).toBe('queued');
    expect(created.id).toMatch(/^run_/);
    const run = await stack.waitForRun(created.id);
    expect(run).toMatchObject({
      status: 'completed',
      stop_reason: 'stop',
      depth: 0,
      output: { role: 'assistant', content: 'Hello there, friend.' },
      metadata: { ticket: 42 },
      parent_run_id: null,
      root_run_id: created.id,
    });
    expect(run.usage.model_calls).toBe(1);
    expect(run.usage.total_tokens).toBeGreaterThan(0);
    expect(run.usage_total.total_tokens).toBe(run.usage.total_tokens);
    const msgs = await stack.getJson(`/v1/runs/${run.id}/messages`);
    expect(msgs.data.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
  });

  it("runs the seeds' three-round example: search → get → update → answer", async () => {
    const user = 'Find Bob and update his company to EPAM';
    scenarios.set(user, (req, round) => {
      if (round === 0) return { tool_calls: [{ name: 'crm__search_contacts', arguments: { query: 'Bob' } }] };
      const last = toolMessages(req).at(-1)!.content as string;
      if (round === 1) return { tool_calls: [{ name: 'crm__get_contact', arguments: { id: JSON.parse(last)[0].id } }] };
      if (round === 2)
        return {
          tool_calls: [{ name: 'crm__update_contact', arguments: { id: JSON.parse(last).id, company: 'EPAM' } }],
        };
      return { content: `Done: ${JSON.parse(last).name} now works at ${JSON.parse(last).company}.` };
    });
    const { id } = await stack.createRun({ input: user });
    const run = await stack.waitForRun(id);
    expect(run.status).toBe('completed');
    expect(run.depth).toBe(3);
    expect(run.output?.content).toBe('Done: Bob Smith now works at EPAM.');
    expect(run.usage).toMatchObject({ model_calls: 4, tool_calls: 3 });
    expect(stack.crm.contacts.get('c1')?.company).toBe('EPAM');

    const msgs = (await stack.getJson(`/v1/runs/${id}/messages`)).data;
    expect(msgs.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    for (let i = 1; i < 7; i += 2) {
      const call = msgs[i];
      const callId = call.role === 'assistant' ? call.tool_calls?.[0]?.id : undefined;
      expect(callId).toBeTypeOf('string');
      expect(msgs[i + 1].tool_call_id).toBe(callId);
    }

    const steps = (await stack.getJson(`/v1/runs/${id}/steps`)).data;
    expect(steps.map((s) => s.depth)).toEqual([0, 1, 2, 3]);
    expect(steps[0].tool_calls[0]).toMatchObject({
      name: 'crm__search_contacts',
      status: 'completed',
      is_error: false,
      attempts: 1,
    });
    expect(JSON.parse(steps[0].tool_calls[0].arguments)).toEqual({ query: 'Bob' });
    expect(steps[3].tool_calls).toEqual([]);
  });

  it('runs two calls of one step in parallel and returns them in call order', async () => {
    const user = 'Two sleeps';
    scenarios.set(user, (req, round) => {
      if (round === 0)
        return {
          tool_calls: [
            { name: 'crm__sleep', arguments: { ms: 400, label: 'slow' } },
            { name: 'crm__sleep', arguments: { ms: 10, label: 'fast' } },
          ],
        };
      return {
        content: toolMessages(req)
          .map((m) => m.content)
          .join(' | '),
      };
    });
    const { id } = await stack.createRun({ input: user });
    const run = await stack.waitForRun(id);
    expect(run.output?.content).toBe('slept 400 ms slow | slept 10 ms fast');
    // The fast call finished first on the server, yet comes second in the transcript.
    const sleeps = stack.crm.calls.filter((c) => c.tool === 'sleep').map((c) => c.args.label);
    expect(sleeps).toContain('slow');
    const steps = (await stack.getJson(`/v1/runs/${id}/steps`)).data;
    const [slow] = steps[0].tool_calls;
    expect(slow.duration_ms).toBeGreaterThanOrEqual(400);
    // In parallel: the fast call started before the slow one had finished (in a row, it could not).
    const fastStart = stack.crm.calls.find((c) => c.args.label === 'fast')!.at;
    const slowEnd = stack.crm.slept.find((c) => c.label === 'slow')!.at;
    expect(fastStart).toBeLessThan(slowEnd);
    expect(stack.crm.slept.findIndex((c) => c.label === 'fast')).toBeLessThan(
      stack.crm.slept.findIndex((c) => c.label === 'slow'),
    );
  });

  it("runs a round's calls in one tool job: one job's cost in Redis, each call begun and stored on its own", async () => {
    const user = 'Three calls, one job';
    scenarios.set(user, (req, round) => {
      if (round === 0)
        return {
          tool_calls: [0, 1, 2].map((i) => ({ name: 'crm__sleep', arguments: { ms: 200, label: `one-job-${i}` } })),
        };
      return {
        content: toolMessages(req)
          .map((m) => m.content)
          .join(' | '),
      };
    });
    const { id } = await stack.createRun({ input: user });
    const run = await stack.waitForRun(id);
    expect(run.output?.content).toBe('slept 200 ms one-job-0 | slept 200 ms one-job-1 | slept 200 ms one-job-2');
    expect(await stack.toolJobState(id, 0, 0)).toBe('completed');
    for (const index of [1, 2]) expect(await stack.toolJobState(id, 0, index)).toBe('unknown');
    // Each call has its own record, events and timing, and the three ran at once.
    const calls = (await stack.getJson(`/v1/runs/${id}/steps`)).data[0].tool_calls;
    expect(calls.map((c) => c.outcome)).toEqual(['ok', 'ok', 'ok']);
    const starts = stack.crm.calls.filter((c) => String(c.args.label).startsWith('one-job-')).map((c) => c.at);
    const ends = stack.crm.slept.filter((c) => c.label.startsWith('one-job-')).map((c) => c.at);
    expect(starts).toHaveLength(3);
    expect(Math.max(...starts)).toBeLessThan(Math.min(...ends));
  });

  it("stores every result of a round before the next turn starts, so that turn finds the round's messages in place", async () => {
    // The tool-worker completes a job without waiting for its result's write (the write goes
    // first on the same connection): every turn must still see every result of its round.
    const user = 'Three quick rounds of three';
    scenarios.set(user, (req, round) => {
      if (round < 3)
        return {
          tool_calls: [0, 1, 2].map((i) => ({ name: 'crm__sleep', arguments: { ms: 1, label: `${round}.${i}` } })),
        };
      return {
        content: toolMessages(req)
          .map((m) => m.content)
          .join(' | '),
      };
    });
    const ids = await Promise.all(Array.from({ length: 8 }, async () => (await stack.createRun({ input: user })).id));
    const store = new RunStore({ redis: stack.redis, prefix: stack.prefix });
    for (const id of ids) {
      const run = await stack.waitForRun(id);
      expect(run.output?.content).toBe(
        [0, 1, 2].flatMap((r) => [0, 1, 2].map((i) => `slept 1 ms ${r}.${i}`)).join(' | '),
      );
      const events = await store.events.read(id);
      for (let depth = 1; depth <= 3; depth++) {
        const next = events.findIndex((e) => e.type === 'step.started' && e.data.depth === depth);
        const done = events.flatMap((e, i) => (e.type === 'tool.completed' && e.data.depth === depth - 1 ? [i] : []));
        expect(done, `round ${depth - 1} of ${id}`).toHaveLength(3);
        expect(Math.max(...done)).toBeLessThan(next);
      }
    }
  });

  it('shows the model a tool error, an unknown tool and malformed arguments, and goes on', async () => {
    const user = 'Break things';
    scenarios.set(user, (req, round) => {
      if (round === 0)
        return {
          tool_calls: [
            { name: 'crm__fail', arguments: { message: 'the CRM is on fire' } },
            { name: 'crm__no_such_tool', arguments: {} },
            { name: 'crm__get_contact', arguments: '{"id": "c1"' },
            { name: 'crm__get_contact', arguments: { id: 7 } },
          ],
        };
      return { content: `saw ${toolMessages(req).length} errors` };
    });
    const { id } = await stack.createRun({ input: user });
    const run = await stack.waitForRun(id);
    expect(run.status).toBe('completed');
    const msgs = (await stack.getJson(`/v1/runs/${id}/messages`)).data;
    const tools = msgs.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(tools[0]).toContain('the CRM is on fire');
    expect(tools[1]).toMatch(/Error executing crm__no_such_tool: .*unknown tool/);
    expect(tools[2]).toMatch(/Error executing crm__get_contact: .*not valid JSON/);
    expect(tools[3]).toMatch(/Error executing crm__get_contact: .*invalid arguments.*id/);
    const steps = (await stack.getJson(`/v1/runs/${id}/steps`)).data;
    expect(steps[0].tool_calls.map((t) => t.is_error)).toEqual([true, true, true, true]);
    // The model saw all four and answered.
    expect(run.output?.content).toBe('saw 4 errors');
  });

  it('uses a real stdio MCP server from npm', async () => {
    const user = 'Remember Carol';
    scenarios.set(user, (req, round) => {
      if (round === 0)
        return {
          tool_calls: [
            {
              name: 'memory__create_entities',
              arguments: { entities: [{ name: 'Carol', entityType: 'person', observations: ['likes tea'] }] },
            },
          ],
        };
      if (round === 1) return { tool_calls: [{ name: 'memory__search_nodes', arguments: { query: 'Carol' } }] };
      return { content: toolMessages(req).at(-1)!.content as string };
    });
    const run = await stack.waitForRun((await stack.createRun({ input: user })).id);
    expect(run.status).toBe('completed');
    expect(run.output?.content).toContain('likes tea');
  });
});

describe('budgets', () => {
  const greedy = (req: ChatRequest, round: number): Reply =>
    req.tool_choice === 'none'
      ? { content: `final after ${round} rounds` }
      : { tool_calls: [{ name: 'crm__count_calls', arguments: {} }] };

  it('final_answer: after max_depth rounds one more call with tools disabled', async () => {
    scenarios.set('Loop forever (final)', greedy);
    const { id } = await stack.createRun({ input: 'Loop forever (final)', max_depth: 2 });
    const run = await stack.waitForRun(id);
    expect(run).toMatchObject({
      status: 'completed',
      stop_reason: 'max_depth',
      depth: 2,
      output: { content: 'final after 2 rounds' },
    });
    expect(run.usage).toMatchObject({ model_calls: 3, tool_calls: 2 });
    const lastReq = stack.llm.requests
      .filter((r) => r.messages.some((m) => m.content === 'Loop forever (final)'))
      .at(-1)!;
    expect(lastReq.tool_choice).toBe('none');
  });

  it('stop: the run ends incomplete and the last requested calls are not run', async () => {
    scenarios.set('Loop forever (stop)', greedy);
    const before = stack.crm.calls.length;
    const { id } = await stack.createRun({ input: 'Loop forever (stop)', max_depth: 2, on_budget_exhausted: 'stop' });
    const run = await stack.waitForRun(id);
    expect(run).toMatchObject({ status: 'incomplete', stop_reason: 'max_depth', depth: 2 });
    expect(run.usage).toMatchObject({ model_calls: 3, tool_calls: 2 });
    expect(stack.crm.calls.length - before).toBe(2);
  });
});

describe('allowlist and structured output', () => {
  it('offers only allowed tools and refuses a call to any other', async () => {
    const user = 'Only search';
    scenarios.set(user, (req, round) => {
      if (round === 0)
        return { tool_calls: [{ name: 'crm__update_contact', arguments: { id: 'c2', company: 'Evil' } }] };
      return {
        content: `${(req.tools ?? []).map((t) => t.function.name).join(',')} :: ${toolMessages(req)[0].content}`,
      };
    });
    const run = await stack.waitForRun((await stack.createRun({ input: user, tools: ['crm__search_*'] })).id);
    const [offered, result] = (run.output?.content ?? '').split(' :: ');
    expect(offered).toBe('crm__search_contacts');
    expect(result).toMatch(/not allowed/);
    expect(stack.crm.contacts.get('c2')?.company).toBe('Globex');
  });

  const schema = {
    type: 'json_schema',
    json_schema: {
      name: 'contact',
      schema: {
        type: 'object',
        properties: { name: { type: 'string' }, age: { type: 'integer' } },
        required: ['name', 'age'],
      },
    },
  };

  it('parses and validates the final answer into output_parsed', async () => {
    scenarios.set('Structured please', (req) => ({
      content: JSON.stringify({
        name: 'Bob',
        age: 41,
        format: (req.response_format as { type?: string } | undefined)?.type,
      }),
    }));
    const run = await stack.waitForRun(
      (await stack.createRun({ input: 'Structured please', response_format: schema })).id,
    );
    expect(run.status).toBe('completed');
    expect(run.output_parsed).toEqual({ name: 'Bob', age: 41, format: 'json_schema' });
  });

  it('fails the run with a clear code when the answer does not match the schema', async () => {
    scenarios.set('Structured but wrong', () => ({ content: '{"name": "Bob"}' }));
    const run = await stack.waitForRun(
      (await stack.createRun({ input: 'Structured but wrong', response_format: schema })).id,
    );
    expect(run.status).toBe('failed');
    expect(run.error?.code).toBe('invalid_structured_output');
    expect(run.error?.message).toContain('age');
  });
});
