import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler, Reply } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';

// A caller's response_format schema is compiled by ajv in the agent-worker, and its `pattern`s
// are matched against the model's answer, which the caller can steer. On a backtracking engine
// `^(a+)+$` against 31 `a`s and a `!` holds the event loop for about a minute here (doubling
// with each `a`); on RE2 it is one linear pass.
const KEY_A = 'key-a-hostile-schema';
const KEY_B = 'key-b-hostile-schema';
const hostileAnswer = JSON.stringify({ name: `${'a'.repeat(31)}!` });
const schema = { type: 'object', properties: { name: { type: 'string', pattern: '^(a+)+$' } }, required: ['name'] };

const firstUser = (req: ChatRequest) => req.messages.find((m) => m.role === 'user')?.content as string;
let answerHandedOut: () => void;
const answered = new Promise<void>((resolve) => (answerHandedOut = resolve));
const handler: Handler = async (req): Promise<Reply> => {
  if (firstUser(req) === 'A') {
    answerHandedOut();
    return { content: hostileAnswer };
  }
  if (req.messages.some((m) => m.role === 'tool')) return { content: 'B done' };
  // B's step runs once A's answer is on its way to being checked.
  await answered;
  return { tool_calls: [{ name: 'crm__count_calls', arguments: {} }] };
};

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ handler, env: { API_KEYS: `${KEY_A},${KEY_B}` } });
});
afterAll(async () => stack?.close());

describe('a response_format schema with a catastrophic pattern', () => {
  // Deliberately far below the old engine's stall: with it the event loop these in-process
  // services share is held past this timeout and the test fails.
  it("stalls nothing: another tenant's run completes beside it, and the answer is checked", {
    timeout: 15_000,
  }, async () => {
    const a = await stack.createRun(
      { input: 'A', response_format: { type: 'json_schema', json_schema: { name: 'pick', schema } } },
      KEY_A,
    );
    const b = await stack.createRun({ input: 'B' }, KEY_B);
    const [aRun, bRun] = await Promise.all([
      stack.waitForRun(a.id, { key: KEY_A, timeoutMs: 15_000 }),
      stack.waitForRun(b.id, { key: KEY_B, timeoutMs: 15_000 }),
    ]);
    expect(bRun).toMatchObject({ status: 'completed', output: { content: 'B done' } });
    expect(aRun).toMatchObject({
      status: 'failed',
      error: { code: 'invalid_structured_output', message: expect.stringContaining('must match pattern "^(a+)+$"') },
    });
  });
});
