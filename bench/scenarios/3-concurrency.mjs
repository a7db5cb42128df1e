// @ts-check
// Scenario 3, realistic latency: many concurrent runs with a 500 ms model against the ideal, the
// in-process loop and the BullMQ loop, with each process's memory (shipped heap flags, then V8's defaults); and scale-out: capped
// model-step slots per agent-worker, on 1 and on 2 agent-workers. The largest batch's windows of
// agentq and of the in-process loop alternate (in-process, agentq, agentq, in-process, …), so that
// the machine's drift weighs on both alike.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { batch, batchWindows, bestWindow, inprocBatch, inprocOnce, nth } from '../lib/batch.mjs';
import { memory } from '../lib/machine.mjs';
import { tmpDir } from '../lib/procs.mjs';
import { emptyRedis, readProbes } from '../lib/redis-cost.mjs';
import { startAgentq } from '../lib/start-agentq.mjs';
import { startBare } from '../lib/start-bare.mjs';
import { startInproc } from '../lib/start-inproc.mjs';
import { STEPS } from '../lib/workload.mjs';
import { HEAP_FLAGS } from '../../scripts/lib/services.mjs';

/** @import { ConcurrencyResults, Ctx, Measurement, MemoryRow, Window } from '../lib/types.d.ts' */

/**
 * @param {Ctx} ctx
 * @returns {Promise<ConcurrencyResults>}
 */
export async function scenarioConcurrency(ctx) {
  const { log, N, MCP, ctl, redis, redisProc, SLOW_MS, SCALE_SLOTS } = ctx;
  const sizes = [...new Set([N.few, N.many])];
  const slowModel = `bench-${SLOW_MS}ms`;
  log(`3. realistic latency: ${sizes.join(' and ')} concurrent runs, ${SLOW_MS} ms model`);
  const loop = await startInproc(MCP);
  /** @type {Record<number, Measurement>} */
  const inproc = {};
  const inprocLabel = (/** @type {number} */ n) => `in-process loop, ${n} at once, ${SLOW_MS} ms model`;
  /** @type {Awaited<ReturnType<typeof measureStack>>} */
  let shipped;
  /** @type {Record<number, Measurement>} */
  let queued;
  try {
    await Promise.all(Array.from({ length: 10 }, () => loop.loop.run('benchmark', 'bench')));
    // The best of as many windows as agentq and the BullMQ loop get: a first window runs slower.
    for (const n of sizes.filter((s) => s !== N.many))
      inproc[n] = await inprocBatch(ctx, loop, n, { model: slowModel, label: inprocLabel(n), repeat: ctx.REPEAT });
    queued = await bullmqLoop();
    // agentq's windows of the largest batch alternate with the in-process loop's (its processes idle meanwhile).
    /** @type {Window[]} */
    const inprocWindows = [];
    shipped = await measureStack('', false, sizes, async (/** @type {number} */ i) =>
      inprocWindows.push(
        await inprocOnce(ctx, loop, N.many, { model: slowModel, label: nth(inprocLabel(N.many), i, ctx.REPEAT) }),
      ),
    );
    inproc[N.many] = bestWindow(inprocWindows, inprocLabel(N.many));
  } finally {
    await loop.stop();
  }
  // The BullMQ loop (those runs as bare flows making the model and MCP calls, no store) with a
  // slot per run: what any loop on BullMQ needs for them here, next to the in-process loop.
  async function bullmqLoop() {
    await emptyRedis(ctx);
    const qloop = await startBare(ctl, redis.url, {
      work: true,
      mcpTransport: MCP,
      agentConcurrency: N.many,
      toolConcurrency: 100,
    });
    try {
      return {
        [N.many]: await batch(ctx, qloop, N.many, {
          model: slowModel,
          label: `BullMQ loop, ${N.many} runs at once, ${SLOW_MS} ms model`,
        }),
      };
    } finally {
      await qloop.stop();
    }
  }

  // One agent-worker with a slot per concurrent run, with the heap flags the services ship with,
  // then with V8's default heap sizing. With `alternate`, the largest batch's windows alternate
  // with it: alternate(i) runs another system's i-th window (before agentq's when i is even,
  // after it when odd).
  /**
   * @param {string} label
   * @param {boolean} v8Heap
   * @param {number[]} runSizes
   * @param {(i: number) => Promise<unknown>} [alternate]
   */
  async function measureStack(label, v8Heap, runSizes, alternate) {
    const probeDir = tmpDir(mkdtempSync(join(tmpdir(), 'agentq-bench-mem-')));
    await emptyRedis(ctx);
    const stack = await startAgentq(ctl, redis.url, {
      agentConcurrency: N.many,
      toolConcurrency: 100,
      mcpTransport: MCP,
      probeDir,
      nodeOptions: '--expose-gc',
      v8Heap,
    });
    try {
      const idle = memory(stack.processes());
      /** @type {Record<number, Measurement>} */
      const batches = {};
      for (const n of runSizes) {
        const batchLabel = `agentq${label}, ${n} runs at once, ${SLOW_MS} ms model`;
        if (!alternate || n !== N.many) {
          batches[n] = await batch(ctx, stack, n, { model: slowModel, label: batchLabel });
          continue;
        }
        const windows = await batchWindows(ctx, stack, n, { model: slowModel });
        try {
          /** @type {Window[]} */
          const all = [];
          for (let i = 0; i < ctx.REPEAT; i++) {
            if (i % 2 === 0) await alternate(i);
            all.push(await windows.once(nth(batchLabel, i, ctx.REPEAT)));
            if (i % 2 === 1) await alternate(i);
          }
          batches[n] = bestWindow(all, batchLabel);
        } finally {
          await windows.close();
        }
      }
      /** @type {MemoryRow[]} */
      const mem = memory([...stack.processes(), ...redisProc]);
      for (const m of mem) m.started = idle.find((i) => i.name === m.name)?.rss;
      // What the services' V8 heaps hold at the end (RSS peaks include garbage not yet collected).
      const probes = await readProbes(probeDir, stack.servicePids());
      const byPid = Object.fromEntries(stack.processes().map((p) => [p.pid, p.name]));
      for (const [pid, v] of Object.entries(probes)) {
        const m = mem.find((x) => x.name === byPid[pid]);
        if (m)
          m.heap = {
            usedMB: v.memory.heapUsed / 2 ** 20,
            totalMB: v.memory.heapTotal / 2 ** 20,
            liveMB: v.afterGc ? v.afterGc.heapUsed / 2 ** 20 : undefined,
          };
      }
      return { batches, memory: mem, config: stack.config };
    } finally {
      await stack.stop();
      rmSync(probeDir, { recursive: true, force: true });
    }
  }
  // Scale-out: capped model-step slots per agent-worker, on 1 and on 2 agent-workers.
  /** @type {ConcurrencyResults['scaleOut']} */
  const scaleOut = { slots: SCALE_SLOTS, n: N.scaleOut, runs: {} };
  for (const workers of [1, 2]) {
    await emptyRedis(ctx);
    const stack = await startAgentq(ctl, redis.url, {
      agentWorkers: workers,
      agentConcurrency: SCALE_SLOTS,
      mcpTransport: MCP,
    });
    try {
      scaleOut.runs[workers] = await batch(ctx, stack, N.scaleOut, {
        model: slowModel,
        label: `agentq, ${N.scaleOut} runs at once, ${SLOW_MS} ms model, ${workers} agent-worker${workers > 1 ? 's' : ''} × ${SCALE_SLOTS} slots`,
      });
    } finally {
      await stack.stop();
    }
  }
  const v8Run = await measureStack(' (V8 default heap)', true, [N.many]);
  return {
    modelMs: SLOW_MS,
    idealMs: STEPS * SLOW_MS,
    sizes,
    // The largest batch's windows of agentq and the in-process loop alternated (their i-th repetitions are a pair).
    alternated: true,
    inproc,
    loop: queued,
    agentq: shipped.batches,
    config: /** @type {ConcurrencyResults['config']} */ (shipped.config),
    heapFlags: HEAP_FLAGS,
    memory: shipped.memory,
    v8Defaults: { agentq: v8Run.batches[N.many], memory: v8Run.memory },
    scaleOut,
  };
}
