import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { runKeys } from '@agentq/shared/store';
import { monitorRedis } from './fixtures/redis-monitor.js';
import { startStack, type Stack } from './fixtures/services.js';

// An agent-worker keeps the transcripts of its last steps (TRANSCRIPT_CACHE_MB): a run's next
// step there reads only the messages added since, yet the model still gets the whole transcript.

const rounds = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const requests = new Map<string, ChatRequest[]>();
const handler: Handler = (req) => {
  const user = String(req.messages.find((m) => m.role === 'user')?.content);
  requests.set(user, [...(requests.get(user) ?? []), req]);
  return rounds(req) < 3
    ? { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 1, label: `r${rounds(req)}` } }] }
    : { content: 'done' };
};

/** The first index of each read of the run's transcript (LRANGE key start -1), in order. */
async function transcriptReads(stack: Stack, input: string) {
  // Every read is kept with its key: the run's first step may read before createRun has answered.
  const reads: Array<{ key: string; start: number }> = [];
  const monitor = await monitorRedis(stack.redisUrl, (c) => {
    if (c.source !== 'lua' && c.args[0]?.toLowerCase() === 'lrange')
      reads.push({ key: c.args[1], start: Number(c.args[2]) });
  });
  try {
    const { id } = await stack.createRun({ input });
    const run = await stack.waitForRun(id);
    expect(run.output?.content).toBe('done');
    const key = runKeys(stack.prefix, id).messages;
    return { id, starts: reads.filter((r) => r.key === key).map((r) => r.start) };
  } finally {
    monitor.close();
  }
}

describe('a step on the worker that made the run’s last step', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ handler });
  });
  afterAll(async () => stack?.close());

  it('reads only the messages added since, and the model still gets the whole transcript', async () => {
    const { id, starts } = await transcriptReads(stack, 'cached');
    const sent = requests.get('cached')!;
    expect(sent).toHaveLength(4);
    const transcript = (await stack.getJson(`/v1/runs/${id}/messages`)).data;
    // Each request is the transcript as it stood, whole; each read starts where the last request ended.
    for (const req of sent) expect(req.messages).toEqual(transcript.slice(0, req.messages.length));
    expect(starts).toEqual([0, ...sent.slice(0, -1).map((req) => req.messages.length)]);
  });
});

describe('with TRANSCRIPT_CACHE_MB=0', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ handler, env: { TRANSCRIPT_CACHE_MB: '0' } });
  });
  afterAll(async () => stack?.close());

  it('every step reads the whole transcript', async () => {
    const { starts } = await transcriptReads(stack, 'uncached');
    expect(starts).toEqual([0, 0, 0, 0]);
  });
});
