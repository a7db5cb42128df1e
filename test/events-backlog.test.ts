import { get, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunObject } from '@agentq/shared/core';
import { RunStore } from '@agentq/shared/store';
import type { Handler } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// A client following a busy run's events that stops reading: the API holds a bounded backlog
// for it (see EventBacklog) and, once it reads again, it gets every event, in order, once.

const handler: Handler = () => ({ content: 'done', delayMs: 20_000 });
let stack: Stack;
let store: RunStore;
beforeAll(async () => {
  stack = await startStack({ handler });
  store = new RunStore({ redis: stack.redis, prefix: stack.prefix });
});
afterAll(async () => stack?.close());

/** The ids of the SSE events in `text` whose type is `type`, and the rest of the text (an event cut short). */
function sseIds(text: string, type: string): { ids: string[]; rest: string } {
  const ids: string[] = [];
  const blocks = text.split('\n\n');
  const rest = blocks.pop() ?? '';
  for (const block of blocks) {
    const lines = block.split('\n');
    if (lines.includes(`event: ${type}`)) ids.push(lines.find((l) => l.startsWith('id: '))!.slice(4));
  }
  return { ids, rest };
}

describe('a client that stops reading a busy run', () => {
  it('gets every event, in order, once, when it reads again, though far more came than are held for it', async () => {
    const res = await stack.request('/v1/runs', { method: 'POST', json: { input: 'busy' } });
    const { id } = (await res.json()) as RunObject;
    const { port } = new URL(stack.api.url);
    const answer = await new Promise<IncomingMessage>((resolve, reject) =>
      get({ host: '127.0.0.1', port, path: `/v1/runs/${id}/events` }, resolve).on('error', reject),
    );
    answer.pause();
    try {
      // 1,500 events of 8 KB (12 MB) while the client reads nothing: more than the sockets take.
      const appended: string[] = [];
      for (let i = 0; i < 1500; i++)
        appended.push(await store.events.append(id, 'message.delta', { depth: 0, text: `${i} ${'x'.repeat(8_000)}` }));
      await new Promise((r) => setTimeout(r, 500));
      const seen: string[] = [];
      let rest = '';
      answer.setEncoding('utf8');
      answer.on('data', (chunk: string) => {
        const parsed = sseIds(rest + chunk, 'message.delta');
        seen.push(...parsed.ids);
        rest = parsed.rest;
      });
      answer.resume();
      await waitFor(() => seen.length >= appended.length, { what: 'every appended event', timeoutMs: 20_000 });
      await new Promise((r) => setTimeout(r, 200));
      expect(seen).toEqual(appended);
    } finally {
      answer.destroy();
      await stack.request(`/v1/runs/${id}/cancel`, { method: 'POST' });
    }
  }, 60_000);
});
