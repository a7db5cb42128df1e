import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEventSchema, type RunObject } from '@agentq/shared/core';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { readSse } from './fixtures/sse.js';
import { startStack, type Stack } from './fixtures/services.js';

// What every event of a run's stream carries (API.md, "Runs"): the run it is about and when it
// happened; a tool call's output on its tool.completed, cut at 16 KB.

const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const handler: Handler = (req) =>
  round(req) === 0
    ? {
        tool_calls: [
          { name: 'crm__fail', arguments: { message: `é${'y'.repeat(20_000)}` } },
          { name: 'crm__search_contacts', arguments: { query: 'Alice' } },
        ],
      }
    : { content: 'done' };

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ handler });
});
afterAll(async () => stack?.close());

describe('every event', () => {
  it('names its run and its time, fits the published schema, and tool.completed carries the output (cut at 16 KB)', async () => {
    const run: RunObject = await stack.createRun({ input: 'events please' });
    const events = await readSse(await stack.request(`/v1/runs/${run.id}/events`));
    expect(events.at(-1)?.event).toBe('run.completed');
    const done = await stack.waitForRun(run.id);
    // Stamped by the process that made the event, so within the run's life (to the millisecond).
    const [from, to] = [Date.parse(run.created_at), Date.parse(done.completed_at!)];
    for (const e of events) {
      const data = e.data;
      expect(
        runEventSchema.safeParse({ id: e.id, event: e.event, data }).success,
        `${e.event} ${JSON.stringify(data).slice(0, 200)}`,
      ).toBe(true);
      expect(data.run_id).toBe(run.id);
      const at = Date.parse(data.at);
      expect(at, e.event).toBeGreaterThanOrEqual(from);
      expect(at, e.event).toBeLessThanOrEqual(to);
    }
    const steps = (await stack.getJson(`/v1/runs/${run.id}/steps`)).data;
    const completed = events.filter((e) => e.event === 'tool.completed').map((e) => e.data);
    const big = completed.find((d) => d.name === 'crm__fail')!;
    const small = completed.find((d) => d.name === 'crm__search_contacts')!;
    const stored = (name: string) => steps[0].tool_calls.find((c) => c.name === name)!.output as string;
    expect(small).toMatchObject({ output: stored('crm__search_contacts'), outcome: 'ok', is_error: false });
    expect(small.truncated).toBeUndefined();
    expect(big).toMatchObject({ truncated: true, outcome: 'tool_error', is_error: true });
    expect(Buffer.byteLength(big.output)).toBeLessThanOrEqual(16 * 1024);
    expect(Buffer.byteLength(big.output)).toBeGreaterThan(16 * 1024 - 4);
    expect(stored('crm__fail').startsWith(big.output)).toBe(true);
  });
});

describe('the events response on the Node server', () => {
  it('has the event-stream headers; HEAD gets them without a stream, holding nothing', async () => {
    const run: RunObject = await stack.waitForRun((await stack.createRun({ input: 'headers please' })).id);
    const res = await stack.request(`/v1/runs/${run.id}/events`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect((await readSse(res)).at(-1)?.event).toBe('run.completed');
    for (let i = 0; i < 3; i++) {
      const head = await stack.request(`/v1/runs/${run.id}/events`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-type')).toBe('text/event-stream');
      expect(await head.text()).toBe('');
    }
    // The connection stays usable after a HEAD: the next request on it is answered.
    const { port } = new URL(stack.api.url);
    const answers = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write(
          `HEAD /v1/runs/${run.id}/events HTTP/1.1\r\nHost: ` +
            `x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        ),
      );
      socket.on('data', (d: Buffer) => (text += d.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answers.match(/^HTTP\/1\.1 200/gm)).toHaveLength(2);
    const metrics = await (await fetch(`${stack.api.url}/metrics`)).text();
    expect(metrics).toMatch(/^agentq_event_streams_open\{[^}]*\} 0$/m);
  });
});
