import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Handler } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';

// Issue 16, findings 10, 11 and 13: what one caller must not reach or break. Each part starts
// its own stack (its own QUEUE_PREFIX) on the suite's Redis; everything stays on loopback.

const answer: Handler = (req) => ({ content: `ok: ${String(req.messages.at(-1)?.content ?? '').slice(0, 40)}` });

/** Asserts the contract's error shape and returns the error. */
async function errorOf(res: Response) {
  const text = await res.text();
  expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/);
  const body = JSON.parse(text);
  expect(body.error.code).toMatch(/^[a-z][a-z0-9_]*$/);
  expect(body.error.message).toBeTypeOf('string');
  return body.error as { code: string; message: string; details?: Array<{ field: string; message: string }> };
}

describe('the dashboard with API_KEYS set and ADMIN_API_KEYS unset (finding 13)', () => {
  const TENANT_A = 'tenant-a-0123456789';
  const TENANT_B = 'tenant-b-0123456789';
  const paths = ['/admin/queues', '/admin/queues/', '/admin/queues/queue/agent', '/admin/queues/api/queues', '/admin/queues/api/queues?activeQueue=agent&status=completed&jobsPerPage=1000'];
  let stack: Stack;
  let secret: string;
  beforeAll(async () => {
    stack = await startStack({ handler: answer, apiKey: TENANT_A, env: { API_KEYS: `${TENANT_A},${TENANT_B}` } });
    // Another tenant's run, whose input the dashboard would show.
    secret = `tenant B's secret input ${Date.now()}`;
    const run = await stack.createRun({ input: secret }, TENANT_B);
    expect((await stack.waitForRun(run.id, { key: TENANT_B })).status).toBe('completed');
  });
  afterAll(async () => stack?.close());

  it.each(paths)('refuses %s to every API key with 403, saying how to open it', async (path) => {
    for (const key of [TENANT_A, TENANT_B]) {
      const res = await stack.request(path, { key });
      expect(res.status, `${path} with a tenant's key`).toBe(403);
      const text = await res.clone().text();
      expect(text).not.toContain(secret);
      const error = await errorOf(res);
      expect(error.code).toBe('forbidden');
      expect(error.message).toContain('ADMIN_API_KEYS');
    }
  });

  it('refuses the dashboard API\'s writes as well, and still 401s a missing or wrong key', async () => {
    for (const method of ['PUT', 'POST', 'DELETE']) {
      const res = await stack.request('/admin/queues/api/queues/agent/clean/completed', { method, key: TENANT_A });
      expect(res.status, method).toBe(403);
      await errorOf(res);
    }
    for (const key of [null, 'not-a-key-0123456789']) {
      const res = await stack.request('/admin/queues/', { key });
      expect(res.status).toBe(401);
      expect((await errorOf(res)).code).toBe('unauthorized');
    }
    // The API itself is unchanged for those keys.
    expect((await stack.request('/v1/runs', { key: TENANT_A })).status).toBe(200);
  });
});

describe('the dashboard of an open service (API_KEYS unset)', () => {
  let open: Stack;
  beforeAll(async () => {
    open = await startStack({ handler: answer });
  });
  afterAll(async () => open?.close());

  it('stays open, as the whole API is', async () => {
    const page = await open.request('/admin/queues/');
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<html/i);
    const api = await open.request('/admin/queues/api/queues');
    expect(api.status).toBe(200);
    expect(((await api.json()) as { queues: Array<{ name: string }> }).queues.map((q) => q.name)).toEqual(expect.arrayContaining(['agent', 'tool', 'webhook']));
  });
});
