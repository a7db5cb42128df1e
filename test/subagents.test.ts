import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstUser, round, scenarioModel, toolMsgs } from './fixtures/scenarios.js';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// Scenarios match on the start of the first user message (a sub-run's is its prompt).
const { handler, on } = scenarioModel();

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ handler });
});
afterAll(async () => stack?.close());

const json = <P extends string>(path: P) => stack.getJson(path);
/** Job states after which a job runs no more ('unknown': removed). */
const ENDED = ['completed', 'failed', 'unknown'];

describe('sub-agents', () => {
  it('runs a batch of three children in parallel, isolated, results in order, usage rolled up', async () => {
    on('Capital of ', (req) => ({
      content: `${firstUser(req).slice(11)} → capital known`,
      usage: { prompt_tokens: 10, completion_tokens: 5 },
      delayMs: 150,
    }));
    on('PARENT batch', (req) =>
      round(req) === 0
        ? {
            tool_calls: [
              {
                name: 'agent_query_batch',
                arguments: {
                  prompts: [
                    'Capital of France',
                    { prompt: 'Capital of Peru', instructions: 'Be terse.' },
                    'Capital of Japan',
                  ],
                },
              },
            ],
            usage: { prompt_tokens: 100, completion_tokens: 10 },
          }
        : {
            content: `children said: ${toolMsgs(req)[0].content}`,
            usage: { prompt_tokens: 100, completion_tokens: 10 },
          },
    );
    const { id } = await stack.createRun({
      input: 'PARENT batch: secret parent text 42',
      subagents: { enabled: true },
    });
    const run = await stack.waitForRun(id);
    expect(run.status).toBe('completed');
    expect(JSON.parse((run.output!.content as string).slice('children said: '.length))).toEqual([
      'France → capital known',
      'Peru → capital known',
      'Japan → capital known',
    ]);
    const children = (await json(`/v1/runs/${id}/children`)).data;
    expect(children).toHaveLength(3);
    // In parallel, not in a row: every child started before any of them had finished.
    const lastStart = Math.max(...children.map((c) => Date.parse(c.started_at!)));
    const firstEnd = Math.min(...children.map((c) => Date.parse(c.completed_at!)));
    expect(lastStart).toBeLessThan(firstEnd);
    for (const c of children) {
      expect(c).toMatchObject({ parent_run_id: id, root_run_id: id, status: 'completed' });
      const msgs = (await json(`/v1/runs/${c.id}/messages`)).data;
      expect(JSON.stringify(msgs)).not.toContain('secret parent text');
      expect(msgs.find((m) => m.role === 'user')?.content).toMatch(/^Capital of /);
    }
    const peru = children.find((c) => String(c.output?.content).startsWith('Peru'))!;
    expect((await json(`/v1/runs/${peru.id}/messages`)).data[0]).toEqual({ role: 'system', content: 'Be terse.' });

    expect(run.usage).toMatchObject({ prompt_tokens: 200, completion_tokens: 20, total_tokens: 220, model_calls: 2 });
    expect(run.usage_total).toMatchObject({
      prompt_tokens: 230,
      completion_tokens: 35,
      total_tokens: 265,
      model_calls: 5,
    });

    const steps = (await json(`/v1/runs/${id}/steps`)).data;
    expect([...(steps[0].tool_calls[0].subrun_ids ?? [])].sort()).toEqual(children.map((c) => c.id).sort());
    const events = (await (await stack.request(`/v1/runs/${id}/events`)).text())
      .split('\n')
      .filter((l) => l.startsWith('event:'));
    expect(events.filter((e) => e.includes('subrun.started'))).toHaveLength(3);
    expect(events.filter((e) => e.includes('subrun.completed'))).toHaveLength(3);
  });

  it('starts no sub-run once the deadline has passed, when the call starts late behind a busy tool queue', async () => {
    on('Late child', () => ({ content: 'should not run' }));
    on('PARENT late', (req) =>
      req.tool_choice === 'none'
        ? { content: 'out of time' }
        : round(req) === 0
          ? { tool_calls: [{ name: 'agent_query', arguments: { prompt: 'Late child' } }] }
          : { content: 'never' },
    );
    // The tool queue is busy: the call's job starts only after the run's deadline.
    const release = await stack.holdToolQueue();
    let id: string;
    try {
      ({ id } = await stack.createRun({
        input: 'PARENT late',
        timeout_ms: 600,
        on_budget_exhausted: 'final_answer',
        subagents: { enabled: true },
      }));
      await waitFor(async () => (await json(`/v1/runs/${id}/steps`)).data.length === 1, {
        what: 'the sub-agent call to be made',
      });
      const created = Date.parse((await json(`/v1/runs/${id}`)).created_at);
      await new Promise((r) => setTimeout(r, Math.max(0, created + 700 - Date.now())));
    } finally {
      await release();
    }
    const run = await stack.waitForRun(id!);
    expect(run).toMatchObject({ status: 'completed', stop_reason: 'timeout', output: { content: 'out of time' } });
    expect((await json(`/v1/runs/${id!}/children`)).data).toEqual([]);
    const steps = (await json(`/v1/runs/${id!}/steps`)).data;
    expect(steps[0].tool_calls[0].output).toMatch(/deadline/);
  });

  it('lets a child use tools and sub-agents of its own, within max_nesting', async () => {
    on('NEST ', (req) => {
      const level = Number(firstUser(req).slice(5));
      if (round(req) === 0)
        return { tool_calls: [{ name: 'agent_query', arguments: { prompt: `NEST ${level + 1}` } }] };
      return { content: `L${level}(${toolMsgs(req)[0].content})` };
    });
    const { id } = await stack.createRun({ input: 'NEST 0', subagents: { enabled: true, max_nesting: 2 } });
    const run = await stack.waitForRun(id);
    // Levels 0 → 1 → 2 run; level 2's call would be level 3 > max_nesting: the model sees why.
    expect(run.output!.content).toMatch(
      /^L0\(L1\(L2\(Error executing agent_query: sub-agents may nest at most 2 levels deep/,
    );
    const [child] = (await json(`/v1/runs/${id}/children`)).data;
    const [grandchild] = (await json(`/v1/runs/${child.id}/children`)).data;
    expect(grandchild).toMatchObject({ parent_run_id: child.id, root_run_id: id });
    expect(run.usage_total.model_calls).toBe(6);
  });

  it('shows the model an error when a batch is over max_batch', async () => {
    on('TOO MANY', (req) =>
      round(req) === 0
        ? { tool_calls: [{ name: 'agent_query_batch', arguments: { prompts: ['a', 'b', 'c'] } }] }
        : { content: toolMsgs(req)[0].content as string },
    );
    const run = await stack.waitForRun(
      (await stack.createRun({ input: 'TOO MANY', subagents: { enabled: true, max_batch: 2 } })).id,
    );
    expect(run.status).toBe('completed');
    expect(run.output!.content).toMatch(/at most 2 prompts \(got 3\)/);
    expect((await json(`/v1/runs/${run.id}/children`)).data).toHaveLength(0);
  });

  it('puts an error text in place of a failed child; its siblings are unaffected', async () => {
    on('Child ok', () => ({ content: 'fine' }));
    on('Child broken', () => ({ error: { status: 400, message: 'this prompt upsets the provider' } }));
    on('MIXED', (req) =>
      round(req) === 0
        ? {
            tool_calls: [
              { name: 'agent_query_batch', arguments: { prompts: ['Child ok 1', 'Child broken', 'Child ok 2'] } },
            ],
          }
        : { content: toolMsgs(req)[0].content as string },
    );
    const run = await stack.waitForRun((await stack.createRun({ input: 'MIXED', subagents: { enabled: true } })).id);
    const results = JSON.parse(run.output!.content as string);
    expect(results[0]).toBe('fine');
    expect(results[1]).toMatch(/^Error: sub-agent run run_\w+ ended failed: .*upsets the provider/);
    expect(results[2]).toBe('fine');
  });

  it('a child cancelled on its own gets an error text in its place; the parent goes on', async () => {
    on('Lazy child', () => ({ tool_calls: [{ name: 'crm__sleep', arguments: { ms: 4000, label: 'lazy-child' } }] }));
    on('Quick child', () => ({ content: 'quick answer' }));
    on('CANCEL ONE', (req) =>
      round(req) === 0
        ? { tool_calls: [{ name: 'agent_query_batch', arguments: { prompts: ['Quick child', 'Lazy child'] } }] }
        : { content: toolMsgs(req)[0].content as string },
    );
    const { id } = await stack.createRun({ input: 'CANCEL ONE', subagents: { enabled: true } });
    await waitFor(() => stack.crm.calls.some((c) => c.args.label === 'lazy-child'), {
      what: "the lazy child's tool call",
    });
    const children = (await json(`/v1/runs/${id}/children`)).data;
    const lazy = children.find((c) => c.status !== 'completed')!;
    expect((await stack.request(`/v1/runs/${lazy.id}/cancel`, { method: 'POST' })).status).toBe(202);
    const run = await stack.waitForRun(id, { timeoutMs: 10_000 });
    expect(run.status).toBe('completed');
    const results = JSON.parse(run.output!.content as string);
    expect(results[0]).toBe('quick answer');
    expect(results[1]).toMatch(/^Error: sub-agent run run_\w+ ended cancelled/);
  });

  it('cancels running children with their parent', async () => {
    on('Slow child', () => ({ tool_calls: [{ name: 'crm__sleep', arguments: { ms: 5000, label: 'slow-child' } }] }));
    on('CANCEL TREE', (req) =>
      round(req) === 0
        ? { tool_calls: [{ name: 'agent_query_batch', arguments: { prompts: ['Slow child A', 'Slow child B'] } }] }
        : { content: 'never' },
    );
    const { id } = await stack.createRun({ input: 'CANCEL TREE', subagents: { enabled: true } });
    await waitFor(() => stack.crm.calls.filter((c) => c.args.label === 'slow-child').length === 2, {
      what: "both children's tool calls",
    });
    const children = (await json(`/v1/runs/${id}/children`)).data;
    expect(children).toHaveLength(2);
    // No run of the tree has a next step while its round's calls work: the call that completes a
    // round enqueues the step after it.
    const runIds = [id, ...children.map((c) => c.id as string)];
    for (const runId of runIds) expect(await stack.stepState(runId, 1), runId).toBe('unknown');
    expect(await stack.toolJobState(id, 0, 0)).toBe('delayed');
    expect((await stack.request(`/v1/runs/${id}/cancel`, { method: 'POST' })).status).toBe(202);
    for (const c of children) expect((await stack.waitForRun(c.id, { timeoutMs: 3000 })).status).toBe('cancelled');
    // A model call could follow once a tool job has ended and released its step: wait until every
    // tool job and step job of the tree has ended (or was removed).
    const ended = async (runId: string) =>
      ENDED.includes(await stack.toolJobState(runId, 0, 0)) && ENDED.includes(await stack.stepState(runId, 1));
    await waitFor(async () => (await Promise.all(runIds.map(ended))).every(Boolean), {
      what: "the tree's tool jobs and the steps after them to end",
    });
    // No model call of the parent or the children after the cancel.
    const parentCalls = stack.llm.requests.filter((r) => firstUser(r) === 'CANCEL TREE');
    expect(parentCalls).toHaveLength(1);
    expect(stack.llm.requests.filter((r) => firstUser(r)?.startsWith('Slow child'))).toHaveLength(2);
  });
});

describe('long context', () => {
  it('answers a counting question over ~1 MB by chunking and fanning out, never sending the whole context', async () => {
    // ~1 MB of filler with the word "needle" planted 137 times at random places.
    const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta'];
    const parts: string[] = [];
    let planted = 0;
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    while (parts.join(' ').length < 1_000_000) {
      for (let i = 0; i < 1000; i++) {
        if (rand() < 0.0009) {
          planted++;
          parts.push('needle');
        } else parts.push(words[Math.floor(rand() * words.length)]!);
      }
    }
    const context = parts.join(' ');
    expect(context.length).toBeGreaterThan(1_000_000);

    on('Count the word "needle" in this chunk', (req) => {
      const text = firstUser(req);
      return { content: String((text.match(/\bneedle\b/g) ?? []).length - 1) }; // minus the word in the prompt itself
    });
    on('How many times does', (req) => {
      const r = round(req);
      const last = toolMsgs(req).at(-1)?.content as string;
      if (r === 0) return { tool_calls: [{ name: 'context_info', arguments: {} }] };
      if (r === 1) return { tool_calls: [{ name: 'context_chunks', arguments: { max_chars: 120_000 } }] };
      if (r === 2) {
        const { chunks } = JSON.parse(last) as { chunks: Array<{ id: string }> };
        return {
          tool_calls: [
            {
              name: 'agent_query_batch',
              arguments: {
                prompts: chunks.map((c) => ({
                  prompt: 'Count the word "needle" in this chunk',
                  context_chunk: c.id,
                })),
              },
            },
          ],
        };
      }
      return { content: String(JSON.parse(last).reduce((n: number, x: string) => n + Number(x), 0)) };
    });
    const { id } = await stack.createRun({
      input: 'How many times does "needle" occur in the context?',
      context,
      subagents: { enabled: true, max_batch: 20 },
    });
    const run = await stack.waitForRun(id, { timeoutMs: 30_000 });
    expect(run.status).toBe('completed');
    expect(Number(run.output!.content)).toBe(planted);
    // No request of the parent carried the context whole (each is far smaller than it).
    const parentRequests = stack.llm.requests.filter((r) => firstUser(r).startsWith('How many times does'));
    expect(parentRequests).toHaveLength(4);
    for (const r of parentRequests) expect(JSON.stringify(r).length).toBeLessThan(50_000);
    // Each child saw one chunk only.
    const childRequests = stack.llm.requests.filter((r) => firstUser(r).startsWith('Count the word'));
    expect(childRequests).toHaveLength(Math.ceil(context.length / 120_000));
    for (const r of childRequests) expect(JSON.stringify(r).length).toBeLessThan(130_000);
  });

  it('accepts a 20 MB context and keeps it out of the prompt', async () => {
    on('BIG CONTEXT', (req) =>
      round(req) === 0
        ? { tool_calls: [{ name: 'context_info', arguments: {} }] }
        : { content: toolMsgs(req)[0].content as string },
    );
    const text = 'lorem ipsum dolor sit amet '.repeat(800_000); // 21.6 MB
    const run = await stack.waitForRun(
      (await stack.createRun({ input: 'BIG CONTEXT', context: [{ name: 'big.txt', text }] })).id,
    );
    expect(JSON.parse(run.output!.content as string)).toEqual({
      documents: [{ name: 'big.txt', chars: text.length }],
      total_chars: text.length,
    });
    for (const r of stack.llm.requests.filter((q) => firstUser(q) === 'BIG CONTEXT'))
      expect(JSON.stringify(r).length).toBeLessThan(10_000);
  });

  it('reads, searches and describes the context', async () => {
    on('CTX TOOLS', (req) => {
      const r = round(req);
      if (r === 0)
        return {
          tool_calls: [
            { name: 'context_info', arguments: {} },
            { name: 'context_read', arguments: { name: 'b.md', offset: 6, length: 5 } },
            { name: 'context_search', arguments: { pattern: 'wor.d', max_hits: 5 } },
            { name: 'context_search', arguments: { pattern: '(' } },
          ],
        };
      return { content: JSON.stringify(toolMsgs(req).map((m) => m.content)) };
    });
    const run = await stack.waitForRun(
      (
        await stack.createRun({
          input: 'CTX TOOLS',
          context: [
            { name: 'a.md', text: 'hello world' },
            { name: 'b.md', text: 'hello there world' },
          ],
        })
      ).id,
    );
    const [info, read, search, bad] = JSON.parse(run.output!.content as string);
    expect(JSON.parse(info)).toEqual({
      documents: [
        { name: 'a.md', chars: 11 },
        { name: 'b.md', chars: 17 },
      ],
      total_chars: 28,
    });
    expect(read).toBe('there');
    expect(
      (JSON.parse(search) as { hits: Array<{ name: string; offset: number }> }).hits.map((h) => [h.name, h.offset]),
    ).toEqual([
      ['a.md', 6],
      ['b.md', 12],
    ]);
    expect(bad).toMatch(/invalid regular expression/);
  });
});
