import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startScriptedLlm, userText, type ScriptedLlm } from '@agentq/scripted-llm';
import { freePort } from '../fixtures/redis.js';
import { serviceGroup, type ServiceProcess } from '../fixtures/processes.js';
import { waitFor } from '../fixtures/wait.js';

// A step that kills its agent-worker (as an answer that exhausts the heap did) must not take down
// every worker that picks it up again, and the other tenants' runs with it. BullMQ hands a step
// job whose worker died on once; the second time its worker dies under it, the job is failed
// without running again, and the run fails with step_crashed_worker. Here the worker is killed
// (SIGKILL) whenever the model receives that run's request, and restarted after each kill.

const KEY_A = 'tenant-a-key-0001';
const KEY_B = 'tenant-b-key-0002';
let llm: ScriptedLlm;
let env: Record<string, string>;
let apiUrl: string;
const services = serviceGroup(() => env);

beforeAll(async () => {
  llm = await startScriptedLlm({
    // The run that crashes its worker never gets an answer: its worker is killed first.
    handler: (req) => (userText(req) === 'crash the worker' ? { hang: true } : { content: 'answered' }),
  });
  const port = await freePort();
  apiUrl = `http://127.0.0.1:${port}`;
  env = {
    REDIS_URL: inject('redisUrl'),
    QUEUE_PREFIX: `crashloop${randomBytes(3).toString('hex')}`,
    PORT: String(port),
    HOST: '127.0.0.1',
    OPENAI_BASE_URL: llm.baseURL,
    OPENAI_API_KEY: 'test',
    MODEL: 'scripted',
    API_KEYS: `${KEY_A},${KEY_B}`,
    LOG_LEVEL: 'info',
    // Short locks: a killed worker's step is found stalled within about a second.
    JOB_LOCK_MS: '1000',
    STALLED_INTERVAL_MS: '300',
  };
  await services.start('api');
}, 60_000);

afterAll(async () => {
  await services.stopAll();
  await llm?.close();
});

const post = async (key: string, input: string): Promise<string> => {
  const res = await fetch(`${apiUrl}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ input }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
};
type Run = { status: string; error?: { code: string; message: string }; output?: { content: string } };
const ended = (key: string, id: string) =>
  waitFor(
    async () => {
      const run = (await (
        await fetch(`${apiUrl}/v1/runs/${id}`, { headers: { authorization: `Bearer ${key}` } })
      ).json()) as Run;
      return ['queued', 'running'].includes(run.status) ? null : run;
    },
    { what: `run ${id} to end`, timeoutMs: 20_000, intervalMs: 50 },
  );

describe('a step that kills its agent-worker', () => {
  it('killed twice, fails its run with step_crashed_worker; another tenant’s run on the restarted worker completes', async () => {
    const requests = () => llm.requests.filter((r) => userText(r) === 'crash the worker').length;
    let worker: ServiceProcess = await services.start('agent-worker');
    const crashing = await post(KEY_A, 'crash the worker');
    for (let kill = 1; kill <= 2; kill++) {
      await waitFor(() => requests() === kill, { what: `the step's model request (${kill})`, timeoutMs: 15_000 });
      await worker.kill('SIGKILL');
      worker = await services.start('agent-worker');
    }
    // Posted once the crash loop is over, so that no kill catches its step.
    const other = await post(KEY_B, 'hello');

    const failed = await ended(KEY_A, crashing);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'step_crashed_worker' } });
    expect(failed.error?.message).toMatch(/died each time it ran it/);
    expect(await ended(KEY_B, other)).toMatchObject({ status: 'completed', output: { content: 'answered' } });
    // The step ran twice (each time killing its worker), never a third time; the worker is up.
    expect(requests()).toBe(2);
    expect(worker.child.exitCode).toBeNull();
    expect(worker.output.some((l) => l.includes('stalled out'))).toBe(true);
  }, 60_000);
});
