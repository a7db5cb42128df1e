import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler, Reply } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// Each scenario scripts the provider's answers for one run: by call number (a list), or from
// the request itself (a function), for a scenario whose calls may be retried.
const scripts = new Map<string, Reply[] | ((req: ChatRequest) => Reply)>();
const seen = new Map<string, number>();
const firstUser = (req: ChatRequest) => req.messages.find((m) => m.role === 'user')?.content as string;
const handler: Handler = (req) => {
  const u = firstUser(req);
  const n = seen.get(u) ?? 0;
  seen.set(u, n + 1);
  const script = scripts.get(u) ?? [{ content: 'ok' }];
  if (typeof script === 'function') return script(req);
  return script[Math.min(n, script.length - 1)];
};
const callsOf = (u: string) => stack.llm.requests.filter((r) => firstUser(r) === u);
const arrivals = new Map<string, number[]>();

let stack: Stack;
beforeAll(async () => {
  // A failed step is retried after 10–30 ms instead of 0.5–1.5 s: these tests are about what is
  // retried, not about how long the backoff is (Retry-After, which overrides it, is tested below).
  // A step waits for a provider that keeps answering 429 at most 4 s in all here (15 min by default).
  stack = await startStack({
    handler,
    env: { MODEL_TIMEOUT_MS: '400', MODEL_BACKOFF_BASE_MS: '20', MODEL_RATE_LIMIT_MAX_WAIT_MS: '4000' },
  });
  const h = handler;
  stack.llm.setHandler((req, ctx) => {
    const u = firstUser(req);
    arrivals.set(u, [...(arrivals.get(u) ?? []), Date.now()]);
    return h(req, ctx);
  });
});
afterAll(async () => stack?.close());

describe('provider faults', () => {
  it("429: the step waits out Retry-After alone; another run's steps go on meanwhile", async () => {
    const a = 'rate limited for three seconds';
    const b = 'not rate limited';
    scripts.set(a, [
      { error: { status: 429, message: 'slow down', headers: { 'retry-after': '3' } } },
      { content: 'after the wait' },
    ]);
    const runA = await stack.createRun({ input: a });
    await waitFor(async () => callsOf(a).length === 1, { what: "the first run's 429" });
    const runB = await stack.waitForRun((await stack.createRun({ input: b })).id);
    expect(runB.output?.content).toBe('ok');
    // The first run's step is still waiting for its Retry-After: the 429 held up no other run.
    expect(callsOf(a)).toHaveLength(1);
    expect((await stack.waitForRun(runA.id)).output?.content).toBe('after the wait');
  });

  it('429: honours Retry-After by delaying the step, without burning attempts', async () => {
    const u = 'rate limited';
    // More 429s than the 8 attempts a turn has: they must not count as attempts.
    scripts.set(u, [
      ...Array(10).fill({ error: { status: 429, message: 'slow down', headers: { 'retry-after-ms': '60' } } }),
      { content: 'finally' },
    ]);
    const run = await stack.waitForRun((await stack.createRun({ input: u })).id);
    expect(run).toMatchObject({ status: 'completed', output: { content: 'finally' }, depth: 0 });
    expect(run.usage.model_calls).toBe(1);
    expect(callsOf(u)).toHaveLength(11);
    const t = arrivals.get(u)!;
    // The step waits for each Retry-After (agentq waits at least 100 ms): look at the typical gap and the total.
    const gaps = t.slice(1).map((x, i) => x - t[i]);
    const sorted = [...gaps].sort((a, b) => a - b);
    expect(sorted[Math.floor(sorted.length / 2)], String(gaps)).toBeGreaterThanOrEqual(90);
    expect(t.at(-1)! - t[0], String(gaps)).toBeGreaterThanOrEqual(600);
  });

  it(
    '429 for longer than MODEL_RATE_LIMIT_MAX_WAIT_MS: ' +
      'the run fails with model_rate_limited instead of waiting for ever',
    async () => {
      const u = 'rate limited for good';
      scripts.set(u, [{ error: { status: 429, message: 'quota exhausted', headers: { 'retry-after-ms': '500' } } }]);
      const run = await stack.waitForRun((await stack.createRun({ input: u })).id, { timeoutMs: 15_000 });
      expect(run).toMatchObject({ status: 'failed', stop_reason: 'error', error: { code: 'model_rate_limited' } });
      expect(run.error?.message).toMatch(/quota exhausted.*MODEL_RATE_LIMIT_MAX_WAIT_MS/);
      // It waited out the 429s (every 500 ms) until the next wait would pass the bound.
      const t = arrivals.get(u)!;
      expect(t.at(-1)! - t[0]).toBeGreaterThanOrEqual(3_000);
      expect((await stack.getJson('/v1/usage')).active_runs).toBe(0);
    },
  );

  it('429 with a Retry-After past MODEL_RATE_LIMIT_MAX_WAIT_MS: the wait is cut to the bound, for one more try there', async () => {
    const u = 'rate limited, come back in ten seconds';
    scripts.set(u, [
      { error: { status: 429, message: 'slow down', headers: { 'retry-after': '10' } } },
      { content: 'at the bound' },
    ]);
    const run = await stack.waitForRun((await stack.createRun({ input: u })).id, { timeoutMs: 15_000 });
    expect(run).toMatchObject({ status: 'completed', output: { content: 'at the bound' } });
    const [a, b] = arrivals.get(u)!;
    expect(b - a).toBeGreaterThanOrEqual(3_900);
  });

  it('429 with Retry-After in seconds waits that long', async () => {
    const u = 'rate limited, seconds';
    scripts.set(u, [{ error: { status: 429, headers: { 'retry-after': '1' } } }, { content: 'after a second' }]);
    const run = await stack.waitForRun((await stack.createRun({ input: u })).id);
    expect(run.output?.content).toBe('after a second');
    const [a, b] = arrivals.get(u)!;
    expect(b - a).toBeGreaterThanOrEqual(900);
  });

  it('a 503 with Retry-After is retried after that long', async () => {
    const u = 'unavailable, come back in two seconds';
    // Plain backoff would retry after 10–30 ms (MODEL_BACKOFF_BASE_MS is 20); the provider asked for 2 s.
    scripts.set(u, [
      { error: { status: 503, message: 'maintenance', headers: { 'retry-after': '2' } } },
      { content: 'back' },
    ]);
    const run = await stack.waitForRun((await stack.createRun({ input: u })).id);
    expect(run.output?.content).toBe('back');
    const [a, b] = arrivals.get(u)!;
    expect(b - a).toBeGreaterThanOrEqual(1900);
  });

  it.each([
    ['a 500', { error: { status: 500, message: 'upstream exploded' } }],
    ['a 503', { error: { status: 503, message: 'overloaded' } }],
    ['a dropped connection', { drop: true }],
    ['a stream cut half-way', { drop: true, afterChunks: 2 }],
    ['a timeout', { hang: true }],
  ] as const)('retries %s with backoff and completes; the failed calls do not count as steps', async (name, fault) => {
    const u = `fault: ${name}`;
    scripts.set(u, [
      fault as Reply,
      { tool_calls: [{ name: 'crm__count_calls', arguments: {} }] },
      fault as Reply,
      { content: 'recovered' },
    ]);
    const run = await stack.waitForRun(
      (await stack.createRun({ input: u, max_depth: 1, on_budget_exhausted: 'stop' })).id,
      { timeoutMs: 20_000 },
    );
    // Two faults, yet max_depth 1 was enough: retries are not rounds.
    expect(run).toMatchObject({ status: 'completed', stop_reason: 'stop', depth: 1, output: { content: 'recovered' } });
    expect(run.usage.model_calls).toBe(2);
    expect(callsOf(u)).toHaveLength(4);
    const msgs = (await stack.getJson(`/v1/runs/${run.id}/messages`)).data;
    expect(msgs.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it.each([
    [400, 'bad request', 'model_bad_request'],
    [400, "This model's maximum context length is 8192 tokens", 'context_length_exceeded'],
    [401, 'invalid api key', 'model_auth_failed'],
    [404, 'no such model', 'model_not_found'],
  ] as const)('fails the run at once on a %i (%s) with code %s', async (status, message, code) => {
    const u = `fatal ${status} ${message}`;
    scripts.set(u, [{ error: { status, message } }]);
    const run = await stack.waitForRun((await stack.createRun({ input: u })).id);
    expect(run).toMatchObject({ status: 'failed', stop_reason: 'error', error: { code } });
    expect(run.error?.message).toContain(message);
    expect(callsOf(u)).toHaveLength(1);
  });
});

describe('limits', () => {
  it('truncates a tool output over the cap, with a marker, before it reaches Redis and the prompt', async () => {
    const u = 'huge output';
    // The fail tool returns its message whole: 150 KB of output. Scripted by round, not by call:
    // a first call that times out (MODEL_TIMEOUT_MS is 400) is retried and must ask for the tool again.
    scripts.set(u, (req) =>
      req.messages.some((m) => m.role === 'tool')
        ? { content: 'done' }
        : { tool_calls: [{ name: 'crm__fail', arguments: { message: 'y'.repeat(150_000) } }] },
    );
    const run = await stack.waitForRun((await stack.createRun({ input: u })).id);
    expect(run.status).toBe('completed');
    // The call that carried the tool result (a slow first call may have been retried).
    const withTool = callsOf(u).find((r) => r.messages.some((m) => m.role === 'tool'));
    expect(withTool, 'a model call that carried the tool result').toBeDefined();
    const tool = withTool!.messages.find((m) => m.role === 'tool')!;
    expect(Buffer.byteLength(tool.content as string)).toBeLessThan(102_400 + 200);
    expect(tool.content).toMatch(/\[output truncated: 150000 bytes, showing the first 102400\]$/);
  });
});

describe('AGENT_RATE_LIMIT', () => {
  let limited: Stack;
  const times: number[] = [];
  beforeAll(async () => {
    limited = await startStack({
      handler: () => {
        times.push(Date.now());
        return { content: 'ok' };
      },
      env: { AGENT_RATE_LIMIT: '2/1000' },
    });
  });
  afterAll(async () => limited?.close());

  it('spreads model steps over the window: at most 2 a second for the whole queue', async () => {
    const runs = await Promise.all(Array.from({ length: 5 }, (_, i) => limited.createRun({ input: `limited ${i}` })));
    for (const r of runs) expect((await limited.waitForRun(r.id, { timeoutMs: 15_000 })).status).toBe('completed');
    expect(times).toHaveLength(5);
    // 5 steps at 2 per second: the 3rd waits for the second window, the 5th for the third.
    expect(times[2] - times[0]).toBeGreaterThanOrEqual(900);
    expect(times[4] - times[0]).toBeGreaterThanOrEqual(1900);
  });
});
