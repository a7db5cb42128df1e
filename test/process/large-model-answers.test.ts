import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createRedis, type RedisClient } from '@agentq/shared/infra';
import { runKeys } from '@agentq/shared/store';
import { startScriptedLlm, type ScriptedLlm } from '@agentq/scripted-llm';
import { startService, waitForOutput, type ServiceProcess } from '../fixtures/processes.js';
import { freePort } from '../fixtures/redis.js';
import { waitFor } from '../fixtures/wait.js';

// Model answers of tens of megabytes, all within MODEL_RESPONSE_MAX_MB (64), to one agent-worker
// at once, under the heap flags the services ship with. Storing an answer copies it several
// times over: one answer of 60 MB, or a few of 20 MB at once, took the worker to its heap limit,
// and it died with every step it was running. With the answer bytes in flight bounded
// (MODEL_ANSWERS_IN_FLIGHT_MB, by default a sixteenth of the heap limit), the 20 MB answers take
// turns, the 60 MB one is refused (it could never be held), and the worker stays up.

/** The heap flags the Dockerfile and `npm start` give the services (scripts/lib/services.mjs). */
const HEAP_FLAGS = '--max-semi-space-size=32 --max-old-space-size=384';
/** The V8 heap limit those flags give: the old generation and three semi-spaces. */
const HEAP_LIMIT_MB = 384 + 3 * 32;
const MB = 1024 * 1024;
const DELTA = 10 * 1024;

const prefix = `bigans${randomBytes(3).toString('hex')}`;
const procs: ServiceProcess[] = [];
let llm: ScriptedLlm | undefined;
let redis: RedisClient | undefined;
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGKILL')));
  await llm?.close();
  if (redis) {
    // Each run keeps its answer several times over (message, step, events, output): gone now.
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
    redis.disconnect();
  }
});

/** A streamed answer of `mb` MB of text in 10 KB deltas, as the provider's chunks. */
function answer(mb: number): unknown[] {
  const meta = { id: 'chatcmpl-big', object: 'chat.completion.chunk', created: 1, model: 'scripted' };
  const chunk = (delta: object, finish: string | null = null) => ({
    ...meta,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const text = 'abcdefghi '.repeat(DELTA / 10);
  return [
    chunk({ role: 'assistant', content: '' }),
    ...Array.from({ length: (mb * MB) / DELTA }, () => chunk({ content: text })),
    chunk({}, 'stop'),
  ];
}

const peakRssMb = (pid: number) =>
  Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

describe('large model answers to one agent-worker', () => {
  it('a 60 MB answer and six of 20 MB at once: the worker stays up within its heap, the 60 MB one fails its run, the others complete', async () => {
    llm = await startScriptedLlm({
      handler: (req) => ({ rawChunks: answer(Number(String(req.messages.at(-1)?.content).split(' ')[0])) }),
    });
    redis = createRedis(inject('redisUrl'));
    const env = {
      REDIS_URL: inject('redisUrl'),
      QUEUE_PREFIX: prefix,
      MODEL: 'scripted',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    };
    const port = await freePort();
    const api = startService('api', { ...env, PORT: String(port) });
    procs.push(api);
    await waitForOutput(api, /api listening/);
    // Every run is queued before the worker starts, so that it takes them all at once.
    const post = async (input: string) => {
      const r = await fetch(`http://127.0.0.1:${port}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input }),
      });
      expect(r.status).toBe(202);
      return ((await r.json()) as { id: string }).id;
    };
    const huge = await post('60 MB');
    const large = await Promise.all(Array.from({ length: 6 }, (_, i) => post(`20 MB, number ${i}`)));
    const agent = startService('agent-worker', {
      ...env,
      OPENAI_BASE_URL: llm.baseURL,
      OPENAI_API_KEY: 'k',
      NODE_OPTIONS: HEAP_FLAGS,
    });
    procs.push(agent);
    await waitForOutput(agent, /worker started/);
    const started = agent.output.find((l) => l.includes('worker started'))!;
    const boundMb = Number(/"model_answers_in_flight_mb":(\d+)/.exec(started)![1]);
    // The default: a sixteenth of the heap limit.
    expect(boundMb).toBe(HEAP_LIMIT_MB / 16);

    // The runs' statuses as stored (the API's run object would carry each 20 MB answer).
    const alive = () => agent.child.exitCode === null && agent.child.signalCode === null;
    const status = (id: string) => redis!.hget(runKeys(prefix, id).run, 'status');
    const ended = await waitFor(
      async () => {
        if (!alive()) throw new Error(`the agent-worker died: ${agent.output.slice(-8).join('\n')}`);
        const all = await Promise.all([huge, ...large].map(status));
        return all.every((s) => s !== 'queued' && s !== 'running') ? all : null;
      },
      { what: 'every run to end', timeoutMs: 60_000, intervalMs: 100 },
    );
    const peak = peakRssMb(agent.child.pid!);
    console.info(
      `60 MB + 6 × 20 MB answers, bound ${boundMb} MB: agent-worker peak RSS ${peak.toFixed(0)} MB; runs ${ended.join(', ')}`,
    );
    expect(alive(), agent.output.slice(-8).join('\n')).toBe(true);
    expect(ended).toEqual(['failed', ...Array(6).fill('completed')]);

    type Run = { error?: { code: string; message: string }; output?: { content: string } };
    const get = async (id: string) => (await (await fetch(`http://127.0.0.1:${port}/v1/runs/${id}`)).json()) as Run;
    const refused = await get(huge);
    expect(refused.error?.code).toBe('model_response_too_large');
    expect(refused.error?.message).toContain(`MODEL_ANSWERS_IN_FLIGHT_MB=${boundMb}`);
    expect((await get(large[0]!)).output?.content).toHaveLength(20 * MB);
    // Within its heap flags: the V8 heap's limit, and what the process holds beside its heap: its
    // code (about 50 MB), and the buffers of the commands it writes to Redis (storing a 20 MB
    // answer sends one of 60 MB and one of 40 MB), which the allocator keeps for reuse once freed.
    expect(peak).toBeLessThan(HEAP_LIMIT_MB + 384);
  }, 90_000);
});
