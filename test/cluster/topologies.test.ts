import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import calculateSlot from 'cluster-key-slot';
import type { Cluster } from 'ioredis';
import { type RunObject } from '@agentq/shared/core';
import { globalKeys, runKeys } from '@agentq/shared/store';
import { cellOf, cellPrefix } from '@agentq/shared/jobs';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { startCluster, startSentinel, type TestCluster, type TestSentinel } from '../fixtures/redis-topologies.js';
import { startStack, type Stack } from '../fixtures/services.js';
import { waitFor } from '../fixtures/wait.js';

// agentq past one Redis: cells spread over a Cluster's shards, a shard down is a 503 at /readyz,
// and a master killed under load (Cluster replica or Sentinel promotion) loses no accepted run.

const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
// Three rounds of one short tool call each, then the answer: runs that are mid-way for a while.
const handler: Handler = (req) =>
  round(req) < 3 ? { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 100, label: 'r' } }] } : { content: 'done' };

const stacks: Stack[] = [];
const topologies: Array<TestCluster | TestSentinel> = [];
// The stacks and their topologies: closed together, and given time on a loaded machine. A close
// is given at most a minute (as a service's shutdown is given its grace period): a client of a
// topology a test left with a dead node must not hold up the rest.
afterAll(async () => {
  const open = new Set<string>();
  const closing = stacks.splice(0).map(async (s) => {
    open.add(s.redisUrl);
    await s.close().catch(() => {});
    open.delete(s.redisUrl);
  });
  await Promise.race([Promise.all(closing), new Promise((r) => setTimeout(r, 60_000))]);
  if (open.size) console.warn(`stacks still closing after a minute, left as they are: ${[...open].join(' ')}`);
  await Promise.all(topologies.splice(0).map((t) => t.stop()));
}, 180_000);

async function stackOn(redisUrl: string, env: Record<string, string> = {}) {
  const stack = await startStack({
    handler,
    redisUrl,
    env: { JOB_LOCK_MS: '2000', STALLED_INTERVAL_MS: '1000', ...env },
  });
  stacks.push(stack);
  return stack;
}

async function runMany(stack: Stack, n: number): Promise<RunObject[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => stack.createRun({ input: `run ${i}` })));
}

describe('cells on a Redis Cluster', () => {
  it("spread a tree's runs by its tag over the cells, each cell served, every run completes", async () => {
    const cluster = await startCluster({ masters: 3 });
    topologies.push(cluster);
    const stack = await stackOn(cluster.url, { CELLS: '3' });
    expect(stack.agent.workers.map((w) => w.name).sort()).toEqual(['agent-c0', 'agent-c1', 'agent-c2']);
    const runs = await runMany(stack, 24);
    const cells = new Set(runs.map((r) => cellOf(r.id, 3)));
    expect(cells.size).toBeGreaterThan(1);
    for (const r of runs) expect((await stack.waitForRun(r.id, { timeoutMs: 30_000 })).status).toBe('completed');
    // Each run's steps went through its own cell's queue.
    for (const r of runs) expect(await stack.stepState(r.id, 3)).toBe('completed');
    // The cells' queues sit on the slots of their own tags ({c0}, {c1}, {c2}: slots 10282, 14347
    // and 2152), which a Cluster of three masters with even slot ranges holds on three masters.
    const tenants = new Set(
      await Promise.all(
        [0, 1, 2].map(async (c) => (await cluster.masterOf(`${cellPrefix(stack.prefix, c)}:agent`)).port),
      ),
    );
    expect(tenants.size).toBe(3);
  });

  it('answers /readyz 503 while a master is down, and 200 once it is back', async () => {
    const cluster = await startCluster({ masters: 3 });
    topologies.push(cluster);
    const stack = await stackOn(cluster.url);
    expect((await stack.request('/readyz')).status).toBe(200);
    const victim = cluster.nodes[1];
    await victim.kill();
    await waitFor(async () => (await stack.request('/readyz')).status === 503, {
      what: '/readyz to say 503',
      timeoutMs: 15_000,
    });
    await victim.restart();
    await waitFor(async () => (await stack.request('/readyz')).status === 200, {
      what: '/readyz to say 200 again',
      timeoutMs: 30_000,
      intervalMs: 200,
    });
  });

  it("loses no accepted run when the master of a cell's queues is killed and its replica takes over", async () => {
    const cluster = await startCluster({ masters: 3, replicasEach: 1 });
    topologies.push(cluster);
    const stack = await stackOn(cluster.url);
    const runs = await runMany(stack, 12);
    // Some are mid-way (a tool call done), none finished yet, when the queues' master dies.
    await waitFor(
      async () => (await Promise.all(runs.map((r) => stack.getJson(`/v1/runs/${r.id}`)))).some((r) => r.depth >= 1),
      { what: 'runs mid-way' },
    );
    const master = await cluster.masterOf(`${cellPrefix(stack.prefix, 0)}:agent`);
    await master.kill();
    for (const r of runs) expect((await stack.waitForRun(r.id, { timeoutMs: 60_000 })).status).toBe('completed');
    // And new runs are accepted and run on the promoted replica.
    const after = await stack.createRun({ input: 'after the failover' });
    expect((await stack.waitForRun(after.id, { timeoutMs: 30_000 })).status).toBe('completed');
  }, 120_000);
});

describe('REDIS_WAIT_REPLICAS on a Cluster', () => {
  it("waits for the Idempotency-Key's claim on its own shard too: " +
    "with that shard's replica gone, a keyed run is refused (503), never accepted unconfirmed", async () => {
    const cluster = await startCluster({ masters: 3, replicasEach: 1 });
    topologies.push(cluster);
    const stack = await stackOn(cluster.url, { REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT_MS: '500' });
    const redis = stack.redis as Cluster;
    const g = globalKeys(stack.prefix);
    const masterPortOf = (key: string) => Number(redis.slots[calculateSlot(key)][0].split(':')[1]);
    const claimKey = (header: string) => g.idempotency('open', createHash('sha256').update(header).digest('hex'));
    // A master that holds neither the pending set nor the queues, whose replica then dies: only
    // a run's own keys or its claim can be on it.
    const busy = new Set([masterPortOf(g.pendingRuns), masterPortOf(`${cellPrefix(stack.prefix, 0)}:agent`)]);
    // {b}, {c} and {a} hash to slots 3300, 7365 and 15495: one in each master's third.
    const masters = await Promise.all(['{b}', '{c}', '{a}'].map((key) => cluster.masterOf(key)));
    const victim = masters.find((m) => !busy.has(m.port))!.port;
    const headers = Array.from({ length: 2_000 }, (_, i) => `claim-${i}`)
      .filter((h) => masterPortOf(claimKey(h)) === victim)
      .slice(0, 12);
    expect(headers).toHaveLength(12);
    const replicas = await cluster.replicasOf(masters.find((m) => m.port === victim)!);
    expect(replicas).toHaveLength(1);
    await replicas[0].kill();

    // A keyed run whose own keys are on a healthy shard: its claim's shard cannot confirm.
    let checked = 0;
    try {
      for (const header of headers) {
        const res = await stack.request('/v1/runs', {
          method: 'POST',
          json: { input: 'claimed' },
          headers: { 'idempotency-key': header },
        });
        const body = (await res.json()) as RunObject & { error?: { code: string; message: string } };
        const runId = body.error ? /run_\w+/.exec(body.error.message)![0] : body.id;
        if (masterPortOf(runKeys(stack.prefix, runId).run) === victim) continue;
        expect(res.status, `run ${runId}, its keys on a healthy shard, its claim on the one without a replica`).toBe(
          503,
        );
        expect(body.error?.code).toBe('replication_timeout');
        checked++;
      }
    } finally {
      // The replica back: the stack closes on a whole topology.
      await replicas[0].restart();
    }
    // Each run's keys land on the victim one time in three: some of the twelve did not.
    expect(checked).toBeGreaterThan(0);
  }, 90_000);
});

describe("a run's shard failing over while its tool calls run", () => {
  // One call that sleeps 3 s, then an answer that quotes the tool messages the step got.
  const quoting: Handler = (req) =>
    round(req) < 1
      ? { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 3000, label: 'x' } }] }
      : { content: JSON.stringify(req.messages.filter((m) => m.role === 'tool').map((m) => m.content)) };

  it('a result that cannot be stored is redone once a replica has taken over: ' +
    'the next step gets the result, never "no result was recorded"', async () => {
    const cluster = await startCluster({ masters: 3, replicasEach: 1 });
    topologies.push(cluster);
    const stack = await startStack({
      handler: quoting,
      redisUrl: cluster.url,
      env: { JOB_LOCK_MS: '2000', STALLED_INTERVAL_MS: '1000' },
    });
    stacks.push(stack);
    const cellMaster = await cluster.masterOf(`${cellPrefix(stack.prefix, 0)}:agent`);
    const t0 = Date.now();
    const runs = await runMany(stack, 12);
    const masters = await Promise.all(runs.map((r) => cluster.masterOf(runKeys(stack.prefix, r.id).run)));
    // A master that holds some runs' keys and not the cell's queues: the jobs carry on, their results cannot be stored.
    const victim = masters.find((m) => m.port !== cellMaster.port)!;
    expect(victim).toBeDefined();
    await waitFor(
      async () =>
        (await Promise.all(runs.map((r) => stack.getJson(`/v1/runs/${r.id}/steps`)))).every((s) => s.data.length >= 1),
      { what: 'every run to be in its tool call' },
    );
    // Killed just before the sleeps end: their results come while no master serves those keys.
    await new Promise((r) => setTimeout(r, Math.max(0, t0 + 2_800 - Date.now())));
    await victim.kill();
    for (const [i, r] of runs.entries()) {
      const done = await stack.waitForRun(r.id, { timeoutMs: 60_000 });
      expect(done.status).toBe('completed');
      const quoted = String((done.output as { content?: string } | null)?.content ?? '');
      expect(quoted, `run ${i} (its keys on the killed master: ${masters[i].port === victim.port})`).toContain(
        'slept 3000 ms x',
      );
      expect(quoted).not.toContain('no result was recorded');
    }
  }, 120_000);
});

describe('Sentinel', () => {
  it('a master killed under load: the replica is promoted, every process follows it, ' +
    'no accepted run is lost; the old master back as a replica changes nothing', async () => {
    const sentinel = await startSentinel();
    topologies.push(sentinel);
    const stack = await stackOn(sentinel.url);
    const runs = await runMany(stack, 10);
    await waitFor(
      async () => (await Promise.all(runs.map((r) => stack.getJson(`/v1/runs/${r.id}`)))).some((r) => r.depth >= 1),
      { what: 'runs mid-way' },
    );
    const oldMaster = sentinel.master.port;
    await sentinel.master.kill();
    await waitFor(async () => (await sentinel.masterPort()) === sentinel.replica.port, {
      what: 'Sentinel to promote the replica',
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    for (const r of runs) expect((await stack.waitForRun(r.id, { timeoutMs: 60_000 })).status).toBe('completed');
    // The old master comes back: Sentinel makes it a replica; writes still go to the new master.
    await sentinel.master.restart();
    const after = await stack.createRun({ input: 'after the old master came back' });
    expect((await stack.waitForRun(after.id, { timeoutMs: 30_000 })).status).toBe('completed');
    expect(await sentinel.masterPort()).not.toBe(oldMaster);
  }, 120_000);

  it('REDIS_WAIT_REPLICAS=1: a run is accepted once a replica holds it; with the replica gone, 503 replication_timeout', async () => {
    const sentinel = await startSentinel();
    topologies.push(sentinel);
    const stack = await stackOn(sentinel.url, { REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT_MS: '500' });
    const timed = async () => {
      const t0 = performance.now();
      const res = await stack.request('/v1/runs', { method: 'POST', json: { input: 'durable' } });
      return { res, ms: performance.now() - t0 };
    };
    const ok = await timed();
    expect(ok.res.status).toBe(202);
    console.info(`POST /v1/runs with REDIS_WAIT_REPLICAS=1: ${ok.ms.toFixed(1)} ms`);
    await sentinel.replica.kill();
    const refused = await timed();
    expect(refused.res.status).toBe(503);
    expect(((await refused.res.json()) as { error: { code: string } }).error.code).toBe('replication_timeout');

    // A refused run was made all the same: a retry with the same Idempotency-Key gets that run
    // (once the replicas hold it), never a second one.
    const keyed = () =>
      stack.request('/v1/runs', {
        method: 'POST',
        json: { input: 'kept once' },
        headers: { 'idempotency-key': 'wait-replicas' },
      });
    const runNamed = async (res: Response) => {
      const { error } = (await res.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe('replication_timeout');
      return /run_\w+/.exec(error.message)?.[0];
    };
    const first = await keyed();
    expect(first.status).toBe(503);
    const made = await runNamed(first);
    expect(made).toBeDefined();
    const retried = await keyed();
    expect(retried.status).toBe(503);
    expect(await runNamed(retried)).toBe(made);
    await sentinel.replica.restart();
    let replayed: Response | undefined;
    await waitFor(
      async () => {
        replayed = await keyed();
        return replayed.status === 200;
      },
      {
        what: 'the retry to get the run once the replica is back',
        timeoutMs: 30_000,
        intervalMs: 500,
      },
    );
    expect(((await replayed!.json()) as RunObject).id).toBe(made);
    const listed = ((await stack.getJson('/v1/runs?limit=100')) as { data: RunObject[] }).data.map((r) => r.id);
    // The run accepted, the one refused without a key (made all the same), and the keyed one, once.
    expect(listed).toHaveLength(3);
    expect(listed).toContain(made);
  }, 90_000);
});
