import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { type RunObject } from '@agentq/shared/core';
import { QUEUE_STATES } from '@agentq/shared/infra';
import { parsePrometheusText, select, total, type Sample } from './fixtures/prometheus-text.js';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

const toolMessages = (req: ChatRequest) => req.messages.filter((m) => m.role === 'tool');
const handler: Handler = (req) => {
  const user = req.messages.find((m) => m.role === 'user')?.content as string;
  const round = req.messages.filter((m) => m.role === 'assistant').length;
  if (user === 'Find Bob and update his company to EPAM') {
    if (round === 0) return { tool_calls: [{ name: 'crm__search_contacts', arguments: { query: 'Bob' } }] };
    const last = toolMessages(req).at(-1)!.content as string;
    if (round === 1) return { tool_calls: [{ name: 'crm__get_contact', arguments: { id: JSON.parse(last)[0].id } }] };
    if (round === 2)
      return { tool_calls: [{ name: 'crm__update_contact', arguments: { id: JSON.parse(last).id, company: 'EPAM' } }] };
    return { content: 'Done.' };
  }
  if (round === 0) {
    return {
      tool_calls: [
        { name: 'crm__fail', arguments: { message: 'the CRM is on fire' } },
        { name: 'crm__sleep', arguments: { ms: 3000 } },
        { name: 'crm__made_up', arguments: {} },
      ],
    };
  }
  return { content: 'saw the errors' };
};

let stack: Stack;
let hook: Server;
let hookUrl: string;
let hookCalls = 0;
const runs: RunObject[] = [];

beforeAll(async () => {
  // The first delivery fails (503), the retry succeeds.
  hook = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(hookCalls++ === 0 ? 503 : 200).end());
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
  stack = await startStack({
    handler,
    env: { METRICS_PORT: '0', TOOL_TIMEOUT_MS: '300', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_BACKOFF_BASE_MS: '50' },
  });
  for (const body of [
    { input: 'Find Bob and update his company to EPAM' },
    { input: 'Break things', webhook: { url: hookUrl, secret: 'hook-secret' } },
  ]) {
    runs.push(await stack.waitForRun((await stack.createRun(body)).id));
  }
  // The webhook is delivered after its run has ended (a 503 first, then the retry).
  await waitFor(() => hookCalls >= 2, { what: 'the webhook delivery and its retry' });
});
afterAll(async () => {
  await stack?.close();
  await new Promise<void>((r) => hook?.close(() => r()));
});

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

// Counters are written a moment after what the test waits for (a job's `completed` event): retry briefly.
async function eventually(check: () => Promise<void>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

describe('metrics', () => {
  it('the runs completed as scripted', () => {
    expect(runs.map((r) => [r.status, r.depth])).toEqual([
      ['completed', 3],
      ['completed', 1],
    ]);
    expect(hookCalls).toBe(2);
  });

  it('the API serves /metrics without a key: runs created and every queue by state', async () => {
    const s = await scrape(`${stack.api.url}/metrics`);
    expect(total(s, 'agentq_runs_created_total', { kind: 'root', service: 'api' })).toBe(2);
    for (const queue of ['agent', 'tool', 'webhook']) {
      for (const state of QUEUE_STATES)
        expect(select(s, 'agentq_queue_jobs', { queue, state }), `${queue}/${state}`).toHaveLength(1);
    }
    expect(total(s, 'agentq_queue_jobs', { queue: 'agent', state: 'active' })).toBe(0);
    expect(select(s, 'agentq_process_cpu_seconds_total')).toHaveLength(1);
    expect(select(s, 'agentq_nodejs_eventloop_lag_seconds').length).toBeGreaterThan(0);
    expect(s.every((x) => x.name.startsWith('agentq_'))).toBe(true);
  });

  it('the agent-worker counts runs finished, model calls, latency and tokens by model', async () => {
    const url = `${stack.agent.metricsUrl}/metrics`;
    await eventually(async () => {
      const s = await scrape(url);
      expect(total(s, 'agentq_runs_started_total')).toBe(2);
      expect(
        select(s, 'agentq_runs_finished_total', {
          status: 'completed',
          stop_reason: 'stop',
          kind: 'root',
          service: 'agent-worker',
        })[0]?.value,
      ).toBe(2);
      expect(select(s, 'agentq_run_duration_seconds_count', { status: 'completed', kind: 'root' })[0]?.value).toBe(2);
      const modelCalls = runs.reduce((a, r) => a + r.usage.model_calls, 0);
      expect(total(s, 'agentq_model_call_duration_seconds_count', { model: 'scripted', outcome: 'ok' })).toBe(
        modelCalls,
      );
      expect(
        total(s, 'agentq_model_call_duration_seconds_bucket', { model: 'scripted', outcome: 'ok', le: '+Inf' }),
      ).toBe(modelCalls);
      expect(total(s, 'agentq_model_tokens_total', { model: 'scripted', type: 'input' })).toBe(
        runs.reduce((a, r) => a + r.usage.prompt_tokens, 0),
      );
      expect(total(s, 'agentq_model_tokens_total', { model: 'scripted', type: 'output' })).toBe(
        runs.reduce((a, r) => a + r.usage.completion_tokens, 0),
      );
      expect(total(s, 'agentq_job_attempts_total', { queue: 'agent', outcome: 'completed' })).toBe(modelCalls);
    });
    const health = await fetch(`${stack.agent.metricsUrl}/healthz`);
    expect(health.status).toBe(200);
  });

  it('the tool-worker counts tool calls by tool and outcome (ok, error, timeout), and webhook deliveries', async () => {
    await eventually(async () => {
      const s = await scrape(`${stack.tool.metricsUrl}/metrics`);
      const calls = (tool: string, outcome: string) => total(s, 'agentq_tool_calls_total', { tool, outcome });
      expect(calls('crm__search_contacts', 'ok')).toBe(1);
      expect(calls('crm__get_contact', 'ok')).toBe(1);
      expect(calls('crm__update_contact', 'ok')).toBe(1);
      expect(calls('crm__fail', 'error')).toBe(1);
      expect(calls('crm__sleep', 'timeout')).toBe(1);
      // A tool the model made up is counted, under `unknown`, not under its invented name.
      expect(calls('unknown', 'error')).toBe(1);
      expect(select(s, 'agentq_tool_calls_total', { tool: 'crm__made_up' })).toHaveLength(0);
      expect(total(s, 'agentq_tool_call_duration_seconds_count')).toBe(6);
      expect(total(s, 'agentq_tool_call_duration_seconds_sum', { tool: 'crm__sleep' })).toBeGreaterThanOrEqual(0.3);
      // Jobs, not calls: the round of three calls ran in one tool-round job.
      expect(total(s, 'agentq_job_attempts_total', { queue: 'tool', outcome: 'completed' })).toBe(4);
      expect(total(s, 'agentq_webhook_deliveries_total', { outcome: 'retrying' })).toBe(1);
      expect(total(s, 'agentq_webhook_deliveries_total', { outcome: 'delivered' })).toBe(1);
      expect(total(s, 'agentq_webhook_deliveries_total', { outcome: 'failed' })).toBe(0);
      expect(select(s, 'agentq_process_resident_memory_bytes', { service: 'tool-worker' })).toHaveLength(1);
    });
  });
});
