#!/usr/bin/env node
// @ts-check
// `npm run bench:redis-instructions` (needs valgrind): what Redis executes a step, counted rather
// than timed: on a shared host the instructions repeat where the time drifts
// (docs/decisions/014-redis-bound-measured-side-by-side.md). Each system (agentq, the BullMQ
// loop, bare BullMQ flows) runs on a redis-server of its own under
// `valgrind --tool=callgrind` (loopback, AOF on as in docker-compose; everything stops by
// itself), counted only while N runs submitted at once run, after 50 to warm up. Then agentq's
// store operations alone, 200 of each at once: what each costs Redis; and a round's begin for runs
// whose spec holds 8 KB of instructions, the spec read or held by the tool-worker. What callgrind
// does not count: system calls (reading and answering clients, writing the AOF file), which are
// where the BullMQ loop's Redis time a step exceeds bare BullMQ's. Env: BENCH_QUICK=1 (fewer
// runs), BENCH_SYSTEMS=agentq,loop,bare.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { batch, batchWindows } from './lib/batch.mjs';
import { startRedis } from './lib/redis-server.mjs';
import { fmt, textTable } from './lib/stats.mjs';
import { soloContext, systemStarts } from './lib/systems.mjs';
import { shared, STEPS } from './lib/workload.mjs';

/**
 * @import { RunSpec } from '@agentq/shared/core'
 * @import { ToolResultRecord } from '@agentq/shared/store'
 * @typedef {'agentq' | 'loop' | 'bare'} Kind
 * @typedef {Record<string, number> & { total: number }} Counts
 */

const QUICK = /^(1|true|yes)$/i.test(process.env.BENCH_QUICK ?? '');
const RUNS = QUICK ? 60 : 300;
const OPS = QUICK ? 40 : 200;
const SYSTEMS = /** @type {Kind[]} */ ((process.env.BENCH_SYSTEMS ?? 'agentq,loop,bare').split(',').filter(Boolean));
if (SYSTEMS.some((s) => !['agentq', 'loop', 'bare'].includes(s)))
  throw new Error('BENCH_SYSTEMS: agentq, loop or bare, comma-separated');
const LABEL = { agentq: 'agentq', loop: 'BullMQ loop', bare: 'bare BullMQ' };
// Functions whose instructions (with what they call) say where a step's go.
const PARTS = [
  ['feedAppendOnlyFile', 'propagating writes to the AOF'],
  ['sha1hex', 'hashing scripts sent as EVAL'],
  ['xaddCommand', 'XADD'],
  ['execCommand', 'MULTI/EXEC'],
];

try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  console.log('bench:redis-instructions: skipped (valgrind is not installed; on Debian: apt-get install valgrind)');
  process.exit(0);
}

/** A redis-server under callgrind with collection off; `counted(fn)` counts what it executes during fn. */
async function countedRedis() {
  const redis = await startRedis({
    under: (dir) => [
      'valgrind',
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${join(dir, 'callgrind.out')}`,
    ],
  });
  const control = (/** @type {string[]} */ ...args) =>
    execFileSync('callgrind_control', [...args, String(redis.pid)], { stdio: 'ignore' });
  let dumps = 0;
  return {
    ...redis,
    /**
     * Instructions Redis executed during fn, in all and in PARTS' functions (inclusive).
     * @param {() => Promise<unknown>} fn
     */
    async counted(fn) {
      control('-i', 'on');
      try {
        await fn();
      } finally {
        control('-i', 'off');
      }
      control('-d');
      const dir = String(redis.dir);
      const dumped = readdirSync(dir)
        .filter((f) => f.startsWith('callgrind.out.'))
        .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()));
      return instructions(join(dir, dumped[dumps++]));
    },
  };
}

/**
 * The total and PARTS' inclusive instructions of a callgrind dump.
 * @param {string} file
 * @returns {Counts}
 */
function instructions(file) {
  const text = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const count = (/** @type {RegExp} */ re) => Number(re.exec(text)?.[1].replace(/,/g, '') ?? 0);
  /** @type {Counts} */
  const out = { total: count(/^\s*([\d,]+) \([^)]*\)\s+PROGRAM TOTALS/m) };
  for (const [fn] of PARTS) out[fn] = count(new RegExp(`^\\s*([\\d,]+) \\([^)]*\\)\\s+\\S*:${fn} `, 'm'));
  return out;
}

const rows = [];
/** @type {Partial<Record<Kind, number>>} */
const perStep = {};
for (const kind of SYSTEMS) {
  const redis = await countedRedis();
  const ctx = soloContext(redis);
  const stack = await systemStarts(ctx)[kind]();
  try {
    await batch(ctx, stack, 50, { label: 'warm-up' });
    // Only the window's runs are counted, not the few each set of windows warms up with.
    const windows = await batchWindows(ctx, stack, RUNS, {});
    const c = await redis.counted(() => windows.once(kind));
    await windows.close();
    const steps = RUNS * STEPS;
    perStep[kind] = c.total / steps;
    rows.push([LABEL[kind], fmt(c.total / steps / 1000), ...PARTS.map(([fn]) => fmt(c[fn] / steps / 1000))]);
  } finally {
    await stack.stop();
    ctx.close();
    await redis.stop();
  }
}
console.log(
  `\nWhat Redis executes a step, ${RUNS} runs submitted at once (thousands of instructions a step, callgrind; a run is ${STEPS} steps):\n`,
);
console.log(textTable(['system', 'in all', ...PARTS.map(([, what]) => what)], rows));
if (perStep.agentq && perStep.loop)
  console.log(
    `\nagentq: ${fmt(perStep.agentq / perStep.loop)}× the BullMQ loop's${perStep.bare ? `, ${fmt(perStep.agentq / perStep.bare)}× bare BullMQ's` : ''}.`,
  );

// agentq's store operations alone: what each costs Redis.
if (SYSTEMS.includes('agentq')) {
  const { RunStore, createRedis, newId, waitForReady } = shared;
  const redis = await countedRedis();
  const conn = createRedis(redis.url, { name: 'bench-instructions' });
  try {
    await waitForReady(conn);
    const store = new RunStore({ redis: conn, prefix: 'bench' });
    /** @type {RunSpec} */
    const spec = {
      model: 'bench',
      max_depth: 10,
      on_budget_exhausted: 'final_answer',
      metadata: {},
      ancestors: [],
      nesting: 0,
    };
    const ids = Array.from({ length: OPS }, () => newId('run'));
    /** @type {Map<string, import('@agentq/shared/store').StepInput['run']>} */
    const runs = new Map();
    const usage = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
    const now = new Date().toISOString();
    const toolCalls = [0, 1, 2].map((i) => ({
      id: `call_${i}`,
      type: /** @type {const} */ ('function'),
      function: { name: 'noop__noop', arguments: `{"i":${i}}` },
    }));
    /** @returns {ToolResultRecord} */
    const record = (/** @type {number} */ i) => ({
      id: `call_${i}`,
      name: 'noop__noop',
      status: 'completed',
      outcome: 'ok',
      output: 'ok',
      is_error: false,
      attempts: 1,
      duration_ms: 3,
      started_at: now,
      completed_at: now,
    });
    /** The run as the step's read found it. */
    const ranOf = (/** @type {string} */ id) => {
      const run = runs.get(id);
      if (!run) throw new Error(`run ${id} was not read`);
      return run;
    };
    // As the workers make them for the benchmark's runs: a step that asks for three calls.
    /** @type {Array<[string, (id: string) => Promise<unknown>]>} */
    const OPERATIONS = [
      [
        'create a run',
        (id) => store.runs.create({ id, tenant: 'bench', spec, messages: [{ role: 'user', content: 'benchmark' }] }),
      ],
      ['start it', (id) => store.runs.start(id)],
      [
        'read a step',
        async (id) => {
          const step = await store.transcript.loadStep(id, 0);
          if (step) runs.set(id, step.run);
        },
      ],
      [
        'step.started',
        (id) =>
          store.events.append(id, 'step.started', { depth: 0, model: 'bench', tools_disabled: false }, { trim: false }),
      ],
      [
        'commit the step',
        (id) =>
          store.transcript.commitStep(
            ranOf(id),
            {
              depth: 0,
              status: 'completed',
              model: 'bench',
              usage,
              started_at: now,
              completed_at: now,
              message: { role: 'assistant', content: null, tool_calls: toolCalls },
            },
            {
              depth: 0,
              usage,
              finish_reason: 'tool_calls',
              content: null,
              tool_calls: toolCalls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
            },
          ),
      ],
      [
        'begin its 3 calls',
        (id) =>
          Promise.all(
            [0, 1, 2].map((i) =>
              store.toolCalls.begin(id, 0, i, 1, {
                event: { depth: 0, index: i, tool_call_id: `call_${i}`, name: 'noop__noop', attempt: 1 },
              }),
            ),
          ),
      ],
      [
        'store their results',
        (id) =>
          Promise.all(
            [0, 1, 2].map((i) =>
              store.toolCalls.complete(
                id,
                0,
                i,
                record(i),
                {
                  depth: 0,
                  index: i,
                  tool_call_id: `call_${i}`,
                  name: 'noop__noop',
                  is_error: false,
                  duration_ms: 3,
                  outcome: 'ok',
                  output: 'ok',
                },
                { count: 3, ancestors: [] },
              ),
            ),
          ),
      ],
      [
        'finish the run',
        (id) =>
          store.runs.finish(id, {
            status: 'completed',
            stopReason: 'stop',
            output: { role: 'assistant', content: 'done' },
          }),
      ],
    ];
    const opRows = [];
    for (const [name, op] of OPERATIONS) {
      const c = await redis.counted(() => Promise.all(ids.map(op)));
      opRows.push([name, fmt(c.total / OPS / 1000), fmt(c.feedAppendOnlyFile / OPS / 1000)]);
    }
    console.log(`\nagentq's store operations alone, ${OPS} of each at once (thousands of instructions each):\n`);
    console.log(textTable(['operation', 'in all', 'propagating writes to the AOF'], opRows));

    // A round's begin for runs whose spec is large (8 KB of instructions, a system prompt): the
    // spec read with the run, or held by the tool-worker from the run's round before.
    const bigSpec = { ...spec, instructions: 'be brief. '.repeat(800) };
    const big = Array.from({ length: OPS }, () => newId('run'));
    await Promise.all(
      big.map((id) =>
        store.runs.create({ id, tenant: 'bench', spec: bigSpec, messages: [{ role: 'user', content: 'benchmark' }] }),
      ),
    );
    const firstRound = await Promise.all(big.map((id) => store.toolCalls.begin(id, 0, 0, 1)));
    const heldOf = new Map(
      big.map((id, i) => {
        const start = firstRound[i];
        if (start.kind !== 'begun') throw new Error(`run ${id}: its first call was not begun (${start.kind})`);
        return [id, { createdAt: start.run.createdAt, spec: start.spec }];
      }),
    );
    const specRows = [];
    for (const [name, depth, holds] of /** @type {Array<[string, number, boolean]>} */ ([
      ['the spec read with the run', 1, false],
      ['the spec held by the tool-worker', 2, true],
    ])) {
      const begin = (/** @type {string} */ id) =>
        Promise.all(
          [0, 1, 2].map((i) =>
            store.toolCalls.begin(id, depth, i, 1, {
              event: { depth, index: i, tool_call_id: `call_${i}`, name: 'noop__noop', attempt: 1 },
              held: holds ? heldOf.get(id) : undefined,
            }),
          ),
        );
      const c = await redis.counted(() => Promise.all(big.map(begin)));
      specRows.push([name, fmt(c.total / OPS / 1000)]);
    }
    console.log(
      `\nBeginning a round of 3 calls, ${OPS} rounds at once, of runs whose spec holds 8 KB of instructions:\n`,
    );
    console.log(textTable(['', 'thousands of instructions a round'], specRows));
  } finally {
    conn.disconnect();
    await redis.stop();
  }
}
