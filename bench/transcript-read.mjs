#!/usr/bin/env node
// @ts-check
// `node bench/transcript-read.mjs` (after `npm run build`): what a model step's read of its
// transcript costs, whole (every step before TRANSCRIPT_CACHE_MB) against only the messages
// added since the worker's previous step of the run (the transcript cache), for transcripts of
// a few sizes. On a redis-server of its own (loopback; stops by itself), one read at a time:
// Redis CPU per read (INFO commandstats), the worker's CPU per read (read + parse), the time of
// one read, and the bytes Redis sends. Then what the cache holds in memory: the V8 heap that
// parsed messages take per byte of their stored JSON. Env: BENCH_QUICK=1 (fewer reads).
import { startRedis } from './lib/redis-server.mjs';
import { commandStats } from './lib/redis-cost.mjs';
import { fmt, quantile, textTable } from './lib/stats.mjs';
import { shared } from './lib/workload.mjs';

/**
 * @import { ChatMessage, RunSpec } from '@agentq/shared/core'
 * @import { RunStore as Store, TranscriptPrefix } from '@agentq/shared/store'
 * @import { CommandStats } from './lib/types.d.ts'
 * @typedef {'whole' | 'size first, then whole' | 'since the last step'} How
 */

const QUICK = /^(1|true|yes)$/i.test(process.env.BENCH_QUICK ?? '');
const { RunStore, createRedis, newId, waitForReady } = shared;
/** @type {RunSpec} */
const spec = {
  model: 'm',
  max_depth: 100,
  on_budget_exhausted: 'final_answer',
  metadata: {},
  ancestors: [],
  nesting: 0,
};
// What a step adds before the next one: its assistant message and the round's tool result.
const ADDED = 2;
// `steps`: the transcript made by that many committed steps and rounds (the run hash holds two
// markers a step), after a first message; `instructions`: the spec's size (a system prompt).
const SHAPES = [
  { name: 'the bench workload at its last step', messages: 8, bytes: 200, reads: 3000 },
  { name: 'a long tool-using run', messages: 40, bytes: 2_000, reads: 2000 },
  { name: 'long context (tool outputs of 4 KB)', messages: 200, bytes: 4_000, reads: 300 },
  { name: 'a run at depth 40 with 8 KB of instructions', steps: 40, bytes: 200, instructions: 8_000, reads: 2000 },
].map((s) => ({ ...s, reads: QUICK ? Math.ceil(s.reads / 10) : s.reads }));

/**
 * The i-th message of a made-up transcript: a user's first, then an assistant's and a tool's in turn.
 * @param {number} i
 * @param {number} bytes
 * @returns {ChatMessage}
 */
const messageOf = (i, bytes) => {
  const content = `m${i} `.padEnd(bytes, 'lorem ipsum dolor sit amet ');
  if (i === 0) return { role: 'user', content };
  return i % 2 ? { role: 'tool', tool_call_id: `call_${i}`, content } : { role: 'assistant', content };
};

/** @param {CommandStats} a @param {CommandStats} b */
const redisUsec = (a, b) =>
  Object.entries(b).reduce((n, [k, v]) => (k === 'info' ? n : n + v.usec - (a[k]?.usec ?? 0)), 0);

// How a step reads: the whole transcript in one round trip (no bound on transcripts in flight),
// its size first and then the messages (a worker bounding them, TRANSCRIPTS_IN_FLIGHT_MB, that
// holds no start of the transcript), or only what was added since its previous step.
/** @type {Record<How, (store: Store, id: string, depth: number, known: TranscriptPrefix) => Promise<{ size?: number } | null>>} */
const READS = {
  whole: (store, id, depth) => store.transcript.loadStep(id, depth),
  'size first, then whole': async (store, id, depth) => {
    const read = await store.transcript.loadStepWithin(id, depth, Number.MAX_SAFE_INTEGER);
    return read && 'tooLarge' in read ? null : read;
  },
  'since the last step': (store, id, depth, known) => store.transcript.loadStep(id, depth, known),
};

/**
 * Commits `steps` steps of one tool call each, and each round's result, as the workers do.
 * @param {Store} store
 * @param {string} id
 * @param {number} steps
 * @param {number} bytes
 */
async function commitSteps(store, id, steps, bytes) {
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  for (let depth = 0; depth < steps; depth++) {
    const run = (await store.transcript.loadStep(id, depth))?.run;
    if (!run) throw new Error(`run ${id} is gone`);
    const now = new Date().toISOString();
    const tool_calls = [
      {
        id: `call_${depth}`,
        type: /** @type {const} */ ('function'),
        function: { name: 'noop__noop', arguments: '{}' },
      },
    ];
    await store.transcript.commitStep(
      run,
      {
        depth,
        status: 'completed',
        model: 'm',
        usage,
        started_at: now,
        completed_at: now,
        message: { role: 'assistant', content: null, tool_calls },
      },
      { depth, usage, finish_reason: 'tool_calls', content: null, tool_calls: [] },
    );
    /** @type {import('@agentq/shared/store').ToolResultRecord} */
    const rec = {
      id: `call_${depth}`,
      name: 'noop__noop',
      status: 'completed',
      outcome: 'ok',
      output: 'x'.repeat(bytes),
      is_error: false,
      attempts: 1,
      duration_ms: 1,
      started_at: now,
      completed_at: now,
    };
    await store.toolCalls.complete(
      id,
      depth,
      0,
      rec,
      { depth, index: 0, tool_call_id: rec.id, name: rec.name, is_error: false, duration_ms: 1, output: rec.output },
      { count: 1, ancestors: [] },
    );
  }
}

/**
 * @param {Store} store
 * @param {import('@agentq/shared/infra').RedisClient} redis
 * @param {string} id
 * @param {number} depth
 * @param {number} reads
 * @param {How} how
 * @param {TranscriptPrefix} known
 */
async function measure(store, redis, id, depth, reads, how, known) {
  /** @type {number[]} */
  const times = [];
  const s0 = await commandStats(redis);
  const c0 = process.cpuUsage();
  let bytes = 0;
  for (let i = 0; i < reads; i++) {
    const t = process.hrtime.bigint();
    const input = await READS[how](store, id, depth, known);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
    bytes += (input?.size ?? NaN) - (how === 'since the last step' ? known.size : 0);
  }
  const c = process.cpuUsage(c0);
  const s1 = await commandStats(redis);
  return {
    redisUs: redisUsec(s0, s1) / reads,
    workerUs: (c.user + c.system) / reads,
    p50: quantile(times, 0.5),
    bytes: bytes / reads,
  };
}

/** V8 heap per stored byte of parsed messages (what TRANSCRIPT_CACHE_MB's megabytes cost). */
function heapPerStoredByte() {
  if (!globalThis.gc) return null;
  const raw = Array.from({ length: 4000 }, (_, i) => JSON.stringify(messageOf(i, 1_000)));
  const stored = raw.reduce((n, m) => n + m.length, 0);
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  const held = raw.map((m) => JSON.parse(m));
  globalThis.gc();
  const after = process.memoryUsage().heapUsed;
  return { ratio: (after - before) / stored, keep: held.length };
}

const server = await startRedis();
// A connection as the agent-worker opens its store's (its writes in bursts).
const redis = createRedis(server.url, { name: 'bench-transcript' });
await waitForReady(redis);
try {
  const prefix = `tr${process.pid}`;
  const store = new RunStore({ redis, prefix });
  const rows = [];
  for (const shape of SHAPES) {
    const id = newId('run');
    const runSpec = shape.instructions ? { ...spec, instructions: 'be brief. '.repeat(shape.instructions / 10) } : spec;
    const depth = shape.steps ?? 1;
    await store.runs.create({
      id,
      tenant: 'bench',
      spec: runSpec,
      messages: Array.from({ length: shape.messages ?? 1 }, (_, i) => messageOf(i, shape.bytes)),
    });
    if (shape.steps) await commitSteps(store, id, shape.steps, shape.bytes);
    const whole = await store.transcript.loadStep(id, depth);
    if (!whole) throw new Error(`run ${id} is gone`);
    const kept = whole.messages.slice(0, -ADDED);
    // What the worker holds after its previous step of the run (the spec too, where it keeps it).
    /** @type {TranscriptPrefix} */
    const known = {
      createdAt: whole.run.createdAt,
      messages: kept,
      size: kept.reduce((n, m) => n + Buffer.byteLength(JSON.stringify(m)), 0),
      spec: whole.spec,
    };
    // Warm every path, then alternate blocks so that drift hits them alike.
    const hows = /** @type {How[]} */ (Object.keys(READS));
    /** @type {Record<string, Array<Awaited<ReturnType<typeof measure>>>>} */
    const blocks = Object.fromEntries(hows.map((how) => [how, []]));
    for (const how of hows) await measure(store, redis, id, depth, 50, how, known);
    for (let block = 0; block < 4; block++) {
      for (const how of hows)
        blocks[how].push(await measure(store, redis, id, depth, Math.ceil(shape.reads / 4), how, known));
    }
    /** @param {Array<Awaited<ReturnType<typeof measure>>>} xs @param {'redisUs' | 'workerUs' | 'p50' | 'bytes'} k */
    const mid = (xs, k) =>
      quantile(
        xs.map((x) => x[k]),
        0.5,
      );
    const kb = (whole.size / 1024).toFixed(1);
    for (const [how, r] of Object.entries(blocks)) {
      rows.push([
        `${shape.name}: ${whole.messages.length} messages, ${kb} KB`,
        how,
        fmt(mid(r, 'redisUs')),
        fmt(mid(r, 'workerUs')),
        fmt(mid(r, 'p50') * 1000),
        fmt(mid(r, 'bytes') / 1024),
      ]);
    }
    await redis.unlink(
      ...Object.values(store.keys(id)).filter((v) => typeof v === 'string'),
      ...Array.from({ length: depth }, (_, d) => store.keys(id).toolCalls(d)),
    );
  }
  console.log(
    `\nOne model step's read of its transcript (block medians of 4 blocks each; Redis ${server.own ? 'of its own' : server.url}):\n`,
  );
  console.log(textTable(['transcript', 'read', 'Redis µs/read', 'worker CPU µs/read', 'p50 µs/read', 'KB sent'], rows));
  const heap = heapPerStoredByte();
  console.log(
    heap
      ? `\nParsed messages hold ${fmt(heap.ratio)} bytes of V8 heap per byte of stored JSON (4,000 messages of 1 KB).`
      : '\n(run with node --expose-gc for the heap per stored byte)',
  );
} finally {
  redis.disconnect();
  await server.stop();
}
