import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { RunObject } from '@agentq/shared/core';
import type { ListedBatch } from '@agentq/shared/store';
import type { ResponseBudget } from './response-budget.js';
import { streamRunList } from './run-list-stream.js';

const run = (id: string) => ({ id, object: 'run', status: 'completed' }) as unknown as RunObject;

/** A run whose output came to be larger than its batch was sized (it ended between the two). */
const grown = { ...run('run_d'), output: { role: 'assistant', content: 'z'.repeat(200) } } as unknown as RunObject;

/** Three batches, sized 70,000, 90,000 and 20 bytes as stored; each read is logged in `log`. */
async function* pages(log: string[]): AsyncGenerator<ListedBatch, string | null> {
  yield {
    bytes: 70_000,
    read: async () => {
      log.push('read 1');
      return [run('run_a'), run('run_b')];
    },
  };
  yield {
    bytes: 90_000,
    read: async () => {
      log.push('read 2');
      return [run('run_c')];
    },
  };
  yield {
    bytes: 20,
    read: async () => {
      log.push('read 3');
      return [grown];
    },
  };
  return 'run_d';
}

describe('streamRunList', () => {
  it(
    'reads each batch only once it has room, writes line breaks while it waits ' +
      '(the connection is not idle), and the answer is still the page as JSON',
    async () => {
      // A budget that has room for each batch only after 300 ms.
      const log: string[] = [];
      const budget = {
        waitFor: (bytes: number) => {
          log.push(`wait ${bytes}`);
          return new Promise((resolve) =>
            setTimeout(() => {
              log.push('room');
              resolve(() => log.push('released'));
            }, 300),
          );
        },
      } as unknown as ResponseBudget;
      const app = new Hono().get('/', (c) =>
        streamRunList(c, pages(log), { budget, keepAliveMs: 50, onError: (err) => expect.fail(err.message) }),
      );
      const text = await (await app.request('/')).text();
      // Each batch waited for twice its stored size (the runs as read and their JSON) before it was
      // read, and held it until written; a line break every 50 ms meanwhile. The batch that came
      // out larger gave its room back and waited again for twice its JSON.
      const grownJson = Buffer.byteLength(`,${JSON.stringify(grown)}`);
      expect(log).toEqual([
        'wait 140000',
        'room',
        'read 1',
        'released',
        'wait 180000',
        'room',
        'read 2',
        'released',
        'wait 40',
        'room',
        'read 3',
        'released',
        `wait ${2 * grownJson}`,
        'room',
        'released',
      ]);
      expect(text.split('\n').length - 1).toBeGreaterThanOrEqual(6);
      expect(JSON.parse(text)).toEqual({ data: [run('run_a'), run('run_b'), run('run_c'), grown], next: 'run_d' });
    },
  );
});
