import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { startCrmMcpServer, type CrmMcpServer } from './fixtures/crm-mcp-server.js';
import { readEffects } from './fixtures/effect-mcp-server.js';
import { freePort } from './fixtures/redis.js';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// Issue 16, findings 6 and 8: what a tool call becomes when its MCP server dies after doing the
// work, answers with more than a message may hold, or is slower than the run's deadline allows.
// The servers are real processes (test/fixtures/effect-mcp-server.ts) that write every effect of
// a tool to a file, so a test counts executions whatever happened to the process.

const FIXTURE = fileURLToPath(new URL('./fixtures/effect-mcp-server.ts', import.meta.url));
const BIG = 12 * 1024 * 1024;

const userOf = (req: ChatRequest) => req.messages.find((m) => m.role === 'user')?.content as string;
const roundOf = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const lastTool = (req: ChatRequest) => String(req.messages.filter((m) => m.role === 'tool').at(-1)?.content);

/** Each input names the tool calls of the first round; the answer repeats what the last tool said. */
const firstRound: Record<string, Array<{ name: string; arguments: Record<string, unknown> }>> = {
  'stdio dies': [{ name: 'eff__write_then_die', arguments: { key: 'stdio' } }],
  'stdio idempotent dies': [{ name: 'eff__idempotent_write_then_die', arguments: { key: 'idem' } }],
  'sse dies': [{ name: 'sse__write_then_die', arguments: { key: 'sse' } }],
  'json dies': [{ name: 'json__write_then_die', arguments: { key: 'json' } }],
  'big beside another': [
    { name: 'big__slow_write', arguments: { key: 'other' } },
    { name: 'big__big_output', arguments: { bytes: BIG, after_slow_write: true } },
  ],
  'late server beside a sleep': [
    { name: 'late__count_calls', arguments: {} },
    { name: 'slow__sleep', arguments: { ms: 1, label: 'beside' } },
  ],
  'past the deadline': [{ name: 'slow__sleep', arguments: { ms: 20_000, label: 'deadline' } }],
};
const handler: Handler = (req) => {
  const calls = firstRound[userOf(req)];
  if (!calls) return { content: `no scenario for ${userOf(req)}` };
  return roundOf(req) === 0 ? { tool_calls: calls } : { content: lastTool(req) };
};

/** Starts the fixture over Streamable HTTP as its own process; resolves with its URL. */
async function startHttpFixture(effects: string, json: boolean): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [FIXTURE, json ? '--http-json' : '--http', effects], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /listening (\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`the HTTP fixture exited (${code}) before listening`)));
  });
  return { url, child };
}

let dir: string;
let stack: Stack;
let slowCrm: CrmMcpServer;
/** A server that is down when the stack starts: its calls are refused until a test starts it. */
let latePort: number;
let lateCrm: CrmMcpServer | undefined;
const children: ChildProcess[] = [];
const effectsOf = (server: string) => join(dir, `${server}.effects`);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentq-mcp-durability-'));
  const sse = await startHttpFixture(effectsOf('sse'), false);
  const json = await startHttpFixture(effectsOf('json'), true);
  children.push(sse.child, json.child);
  slowCrm = await startCrmMcpServer();
  latePort = await freePort();
  stack = await startStack({
    handler,
    mcpServers: {
      eff: { command: process.execPath, args: [FIXTURE, effectsOf('eff')] },
      big: { command: process.execPath, args: [FIXTURE, effectsOf('big')] },
      sse: { url: sse.url },
      json: { url: json.url },
      // The server allows a minute per call; the runs that call it have far less.
      slow: { url: slowCrm.url, timeout_ms: 60_000 },
      late: { url: `http://127.0.0.1:${latePort}/mcp` },
    },
    env: { TOOL_TIMEOUT_MS: '15000' },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await slowCrm?.close();
  await lateCrm?.close();
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

async function runOf(input: string, extra: Record<string, unknown> = {}) {
  const { id } = await stack.createRun({ input, ...extra });
  const run = await stack.waitForRun(id, { timeoutMs: 50_000 });
  const steps = (await stack.getJson(`/v1/runs/${id}/steps`)).data;
  return { run, calls: steps[0].tool_calls };
}

const count = (server: string, line: string) => readEffects(effectsOf(server)).filter((l) => l === line).length;

describe('a server that dies after doing the work (finding 6)', () => {
  it.each([
    ['stdio', 'eff', 'stdio dies'],
    ['Streamable HTTP, SSE answers', 'sse', 'sse dies'],
    ['Streamable HTTP, JSON answers', 'json', 'json dies'],
  ])(
    'over %s: a non-idempotent call runs once and ends unknown_outcome',
    async (_transport, server, input) => {
      const { run, calls } = await runOf(input);
      const key = firstRound[input][0].arguments.key;
      expect(count(server, `write_then_die ${key}`), JSON.stringify(calls)).toBe(1);
      expect(calls[0], JSON.stringify(calls[0])).toMatchObject({
        outcome: 'unknown_outcome',
        is_error: true,
        attempts: 1,
      });
      expect(calls[0].output).toMatch(new RegExp(`^Error executing ${server}__write_then_die: the outcome is unknown`));
      // The model was told, in those words.
      expect(run).toMatchObject({ status: 'completed', output: { content: calls[0].output } });
    },
    60_000,
  );

  it('an idempotent call is sent again to the restarted server and answers', async () => {
    const { run, calls } = await runOf('stdio idempotent dies');
    expect(count('eff', 'idempotent_write_then_die idem')).toBe(2);
    expect(calls[0]).toMatchObject({ outcome: 'ok', output: 'wrote idem' });
    expect(run.output?.content).toBe('wrote idem');
  }, 60_000);
});

describe('a round whose calls share one job, one call of it retried', () => {
  it('runs the refused call again once its server is up, and the call beside it once', async () => {
    const { id } = await stack.createRun({ input: 'late server beside a sleep' });
    // The round's job failed its first attempt (the late server refused the call) and waits to retry.
    await waitFor(async () => (await stack.toolJobState(id, 0, 0)) === 'delayed', {
      what: "the round's job to wait for its retry",
      timeoutMs: 20_000,
    });
    expect(slowCrm.calls.filter((c) => c.args.label === 'beside')).toHaveLength(1);
    lateCrm = await startCrmMcpServer({ port: latePort });
    const run = await stack.waitForRun(id, { timeoutMs: 50_000 });
    const calls = (await stack.getJson(`/v1/runs/${id}/steps`)).data[0].tool_calls;
    expect(await stack.toolJobState(id, 0, 0)).toBe('completed');
    // Sent once it could be, and counted as the job's later attempt.
    expect(lateCrm.calls.map((c) => c.tool)).toEqual(['count_calls']);
    expect(calls[0]).toMatchObject({ outcome: 'ok', output: '1' });
    expect(calls[0].attempts).toBeGreaterThanOrEqual(2);
    // The call beside it had its result stored in the first attempt: it is not run again.
    expect(slowCrm.calls.filter((c) => c.args.label === 'beside')).toHaveLength(1);
    expect(calls[1]).toMatchObject({ outcome: 'ok', output: 'slept 1 ms beside', attempts: 1 });
    expect(run).toMatchObject({ status: 'completed', output: { content: 'slept 1 ms beside' } });
  }, 60_000);
});

describe('a stdio server that answers one call with more than a message may hold (finding 6)', () => {
  it('that call fails alone; the call beside it completes once; the server is never restarted', async () => {
    const { id } = await stack.createRun({ input: 'big beside another' });
    // The other call holds its answer until the big one has its result, so it is in flight the whole time.
    await waitFor(async () => (await stack.getJson(`/v1/runs/${id}/steps`)).data[0]?.tool_calls?.[1]?.output, {
      what: 'the big call to end',
      timeoutMs: 30_000,
    });
    await writeFile(`${effectsOf('big')}.release`, '');
    const run = await stack.waitForRun(id, { timeoutMs: 50_000 });
    const calls = (await stack.getJson(`/v1/runs/${id}/steps`)).data[0].tool_calls;

    expect(calls[1], JSON.stringify(calls[1]).slice(0, 500)).toMatchObject({
      outcome: 'server_error',
      is_error: true,
      attempts: 1,
    });
    expect(calls[1].output).toMatch(
      new RegExp(
        "^Error executing big__big_output: the server's answer was over the 10485760-byte limit " +
          String.raw`on one MCP message \(\d+ bytes\)`,
      ),
    );
    expect(count('big', `big_output ${BIG}`)).toBe(1);
    expect(calls[0]).toMatchObject({ outcome: 'ok', output: 'wrote other', attempts: 1 });
    expect(count('big', 'slow_write other')).toBe(1);
    expect(readEffects(effectsOf('big')).filter((l) => l.startsWith('start '))).toHaveLength(1);
    expect(run.status).toBe('completed');
  }, 60_000);
});

describe("a server's timeout_ms longer than the run has left (finding 8)", () => {
  it("the call is abandoned at the run's deadline and the run ends by its timeout", async () => {
    const { run, calls } = await runOf('past the deadline', { timeout_ms: 1_500 });
    expect(calls[0], JSON.stringify(calls[0])).toMatchObject({ outcome: 'timeout', is_error: true });
    expect(calls[0].output).toBe("Error executing slow__sleep: abandoned at the run's deadline (timeout_ms)");
    expect(run.stop_reason).toBe('timeout');
    // The server was told to stop; the sleep never finished.
    await expect.poll(() => slowCrm.aborted).toContain('deadline');
    expect(slowCrm.slept.map((s) => s.label)).not.toContain('deadline');
  }, 40_000);
});
