import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { startScriptedLlm, type ScriptedLlm } from '@agentq/scripted-llm';
import { startService, waitForOutput, type ServiceProcess } from '../fixtures/processes.js';
import { parsePrometheusText, total } from '../fixtures/prometheus-text.js';
import { freePort } from '../fixtures/redis.js';

// An agent-worker with a small heap takes 80 runs whose transcripts hold 2 MB each, all queued
// before it starts. A step in flight holds its transcript several times over (the parsed
// messages, the request body the SDK builds, the bytes it sends): without a bound, the worker
// took all 80 at once and ran out of heap (peak ≈ 290 MB RSS, then killed by V8, no run done).
// With the transcripts in flight bounded (TRANSCRIPTS_IN_FLIGHT_MB, by default a sixteenth of the
// heap limit), the others wait their turn and every run completes.

const prefix = `amem${randomBytes(4).toString('hex')}`;
const procs: ServiceProcess[] = [];
let llm: ScriptedLlm | undefined;
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGKILL')));
  await llm?.close();
  const redis = new Redis(inject('redisUrl'));
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

const peakRssMb = (pid: number) =>
  Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const RUNS = 80;
const MB = 1024 * 1024;

describe('many long transcripts at once', () => {
  it('wait for room instead of exhausting the agent-worker heap: every run completes, the worker stays up', async () => {
    llm = await startScriptedLlm({ handler: () => ({ content: 'read it', delayMs: 500 }) });
    const [port, metricsPort] = [await freePort(), await freePort()];
    const env = {
      REDIS_URL: inject('redisUrl'),
      QUEUE_PREFIX: prefix,
      MODEL: 'scripted',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    };
    const api = startService('api', { ...env, PORT: String(port), MAX_INPUT_BYTES: String(3 * MB) });
    procs.push(api);
    await waitForOutput(api, /api listening/);
    // Every run is queued before the worker starts, so that it may take them all at once.
    const input = 'word '.repeat((2 * MB) / 5);
    const ids: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const r = await fetch(`http://127.0.0.1:${port}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input: `${i} ${input}` }),
      });
      expect(r.status).toBe(202);
      ids.push(((await r.json()) as { id: string }).id);
    }
    const agent = startService('agent-worker', {
      ...env,
      OPENAI_BASE_URL: llm.baseURL,
      OPENAI_API_KEY: 'k',
      AGENT_CONCURRENCY: '100',
      METRICS_PORT: String(metricsPort),
      NODE_OPTIONS: '--max-old-space-size=128',
    });
    procs.push(agent);
    await waitForOutput(agent, /worker started/);
    const capacityMb = Number(
      /"transcripts_in_flight_mb":(\d+)/.exec(agent.output.find((l) => l.includes('worker started'))!)![1],
    );
    // The default: a sixteenth of the heap limit (V8 adds the young generation to the 128 MB).
    expect(capacityMb).toBeGreaterThanOrEqual(8);
    expect(capacityMb).toBeLessThanOrEqual(32);

    const alive = () => agent.child.exitCode === null && agent.child.signalCode === null;
    const seen = { heldMb: 0, waiting: 0 };
    const deadline = Date.now() + 120_000;
    let statuses: string[] = [];
    while (Date.now() < deadline && alive()) {
      const m = parsePrometheusText(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
      seen.heldMb = Math.max(seen.heldMb, total(m, 'agentq_transcript_bytes_in_flight') / MB);
      seen.waiting = Math.max(seen.waiting, total(m, 'agentq_steps_waiting_for_transcript_room'));
      statuses = await Promise.all(
        ids.map(
          async (id) =>
            ((await (await fetch(`http://127.0.0.1:${port}/v1/runs/${id}`)).json()) as { status: string }).status,
        ),
      );
      if (statuses.every((s) => s === 'completed')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const peak = alive() ? peakRssMb(agent.child.pid!) : NaN;
    console.info(
      `${RUNS} runs × 2 MB transcripts, bound ${capacityMb} MB: ` +
        `held at most ${seen.heldMb.toFixed(1)} MB, up to ${seen.waiting} steps waiting; ` +
        `agent-worker peak RSS ${peak.toFixed(0)} MB`,
    );
    expect(alive(), `the agent-worker died: ${agent.output.slice(-8).join('\n')}`).toBe(true);
    expect(statuses.filter((s) => s === 'completed')).toHaveLength(RUNS);
    // The bound held, and was what kept the others waiting.
    expect(seen.heldMb).toBeGreaterThan(0);
    expect(seen.heldMb).toBeLessThanOrEqual(capacityMb);
    expect(seen.waiting).toBeGreaterThan(0);
  }, 180_000);
});
