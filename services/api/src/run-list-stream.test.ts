import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { RunObject } from '@agentq/shared';
import type { ResponseBudget } from './response-budget.js';
import { streamRunList } from './run-list-stream.js';

const run = (id: string) => ({ id, object: 'run', status: 'completed' }) as unknown as RunObject;

async function* pages(): AsyncGenerator<RunObject[], string | null> {
  yield [run('run_a'), run('run_b')];
  yield [run('run_c')];
  return 'run_c';
}

describe('streamRunList', () => {
  it('writes line breaks while a batch waits for room (the connection is not idle), and the answer is still the page as JSON', async () => {
    // A budget that has room for each batch only after 300 ms.
    const waits: number[] = [];
    const budget = {
      waitFor: (bytes: number) => {
        waits.push(bytes);
        return new Promise((resolve) => setTimeout(() => resolve(() => {}), 300));
      },
    } as unknown as ResponseBudget;
    const app = new Hono().get('/', (c) => streamRunList(c, pages(), { budget, keepAliveMs: 50, onError: (err) => expect.fail(err.message) }));
    const text = await (await app.request('/')).text();
    // Each batch waited (counted twice: the runs as read and their JSON), writing a line break every 50 ms.
    expect(waits).toEqual([2 * Buffer.byteLength(`${JSON.stringify(run('run_a'))},${JSON.stringify(run('run_b'))}`), 2 * Buffer.byteLength(`,${JSON.stringify(run('run_c'))}`)]);
    expect(text.split('\n').length - 1).toBeGreaterThanOrEqual(6);
    expect(JSON.parse(text)).toEqual({ data: [run('run_a'), run('run_b'), run('run_c')], next: 'run_c' });
  });
});
