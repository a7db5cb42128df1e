// @ts-check
// BENCHMARKS.md: the current figures of a full run, each beside its baselines and under the
// command that measures it again. Short on purpose; what the figures led to is in
// docs/decisions/, what the methods are in bench/run.mjs and the scenarios' files.
import { largest } from './derive.mjs';
import { fmt, mdTable, pct } from './stats.mjs';
import { CPU_COLUMNS, cpuTable, MEMORY_COLUMNS, memoryTable, redisBreakdown, summaryRows } from './tables.mjs';

/** @import { Derived, Results } from './types.d.ts' */

/** Each scenario: its title, what it does, and the command that runs it alone. */
const SCENARIOS = [
  {
    n: '1',
    title: 'One run at a time',
    how: "runs of the four systems take turns in blocks, so that the machine's drift weighs on all alike; then a 500 ms model, the systems alternating run by run",
  },
  {
    n: '2',
    title: 'Throughput',
    how: 'runs submitted at once over 64 HTTP connections, timed from the first submission to the last completion; each system on an emptied Redis, the best of its windows',
  },
  {
    n: '3',
    title: 'Many concurrent runs with a 500 ms model, memory, scale-out',
    how: "one agent-worker with a slot per run; agentq's windows of the largest batch alternate with the in-process loop's",
  },
  {
    n: '4',
    title: 'What a step asks of Redis',
    how: "`INFO commandstats` (commands run inside scripts included), a probe in each process counting what it sends, the redis-server's CPU; each system twice, each time on an emptied Redis",
  },
  {
    n: '5',
    title: 'Redis-bound throughput',
    how: 'each system on a Redis of its own capped at a share of one core (a cgroup CPU quota), agentq side by side with each baseline in windows run at once, so that whatever else the host does slows both alike (also `npm run bench:paired`)',
  },
];

/** The other benchmarks: their commands, what they measure, and the page that holds their figures. */
const OTHERS = [
  [
    'npm run bench:waiting',
    'runs that wait for an answer: Redis memory and jobs per waiting run, answer → call',
    'docs/runs-that-wait.md#measured',
  ],
  [
    'npm run bench:cluster',
    '1 cell against 3 on a Redis Cluster; 10,000 concurrent runs',
    'docs/operating.md#past-one-redis-measured',
  ],
  [
    'npm run bench:transcript',
    "a step's read of its transcript, whole or from the worker's cache",
    'docs/decisions/006-steps-read-only-what-the-worker-lacks.md',
  ],
  [
    'npm run bench:model-call',
    "one streamed model call in the agent-worker's process",
    'docs/decisions/009-model-calls-over-node-http-only.md',
  ],
  [
    'npm run bench:api',
    "the API's CPU for `POST /v1/runs` and `GET /v1/runs/:id`, beside a bare HTTP server",
    'docs/decisions/011-the-apis-request-path.md',
  ],
  [
    'npm run bench:redis-instructions',
    'instructions Redis executes a step and per store operation (valgrind)',
    'docs/decisions/002-one-script-per-store-operation.md',
  ],
  [
    'npm run bench:paired',
    'two systems side by side, each on a capped Redis of its own (scenario 5 alone)',
    'docs/decisions/014-redis-bound-measured-side-by-side.md',
  ],
  ['BENCH_COMPARE=<checkout> node bench/run.mjs', 'A/B of a code change: another built checkout against this one', ''],
  ['N=200 node bench/timeline.mjs', "where one run's time goes, step by step (`BARE=1`, `LOOP=1`: the baselines)", ''],
];

/**
 * The page, from a full run's results and the figures derived from them.
 * @param {Results} r
 * @param {Derived} d
 */
export function markdown(r, d) {
  const m = r.machine;
  const c = r.config;
  /** @type {string[]} */
  const out = [];
  const add = (/** @type {string[]} */ ...lines) => out.push(...lines);
  add(
    '# Benchmarks',
    '',
    `What durability costs agentq against three baselines, from one run of \`npm run bench\` on ${r.startedAt.slice(0, 16).replace('T', ' ')} UTC (commit ${m.commit}, ${fmt(r.durationS)} s). \`npm run bench\` rewrites this page; its raw results and a chart go to \`bench/results/\`, which git ignores. What the figures led to is in [docs/decisions](docs/decisions/); how to read them in [docs/benchmarks.md](docs/benchmarks.md).`,
    '',
    '## Reproduce',
    '',
    '```sh',
    'npm run bench                        # build, then scenarios 1–5 (8–13 minutes); rewrites this page',
    'BENCH_ONLY=2 npm run bench           # one scenario (or BENCH_ONLY=2,4); results to bench/results/partial.json',
    'BENCH_QUICK=1 npm run bench          # smoke version: 100 runs instead of 1,000, no repetitions',
    'BENCH_MCP=http npm run bench         # the no-op MCP server over Streamable HTTP instead of stdio',
    'BENCH_PROFILE=1 npm run bench        # also CPU profiles of the services (bench/results/profiles)',
    'BENCH_REPORT_ONLY=1 node bench/run.mjs   # this page again from bench/results/latest.json',
    '```',
    '',
    'It needs `redis-server` on the PATH (it starts its own on a free loopback port; `BENCH_REDIS_URL` uses another one under a key prefix of its own), talks only to 127.0.0.1 and stops every process it starts. It is not part of `npm test`.',
    '',
    '## Machine and workload',
    '',
    `${m.nproc} cores (${m.cpu}), ${fmt(m.ramGiB)} GiB, ${m.os}; Node ${m.node}; Redis ${m.redis} (${m.redisSetup}); bullmq ${m.bullmq}, ioredis ${m.ioredis}, @modelcontextprotocol/sdk ${m.mcpSdk}, openai ${m.openai}. Redis, the services, the model, the MCP server and the benchmark share the cores.`,
    '',
    `- **Workload**: every run is ${c.rounds} rounds of ${c.fanout} parallel tool calls and an answer: ${c.steps} model steps, ${c.toolCallsPerRun} tool calls. "A step" divides a run by ${c.steps}. The model is the project's scripted OpenAI-compatible server (streamed, 0 or 500 ms a call), the tools a no-op MCP server over ${c.mcpTransport}.`,
    `- **agentq**: the built services as processes, one api, one or two agent-workers, one tool-worker, the heap flags they ship with (\`${c.heapFlags ?? '–'}\`).`,
    '- **in-process loop**: the same agent loop as a recursion in one process; no queue, no store.',
    "- **bare BullMQ**: the job graph of a plain BullMQ agent loop (a job a model step, each round a flow of one job a call under the next step) with no-op processors: the queue's own cost.",
    '- **BullMQ loop**: that job graph doing the model and MCP calls, the transcript in the job data; no store, events or guarantees.',
    '',
    '## Results',
    '',
  );
  const rows = summaryRows(r, d);
  for (const s of SCENARIOS) {
    const mine = rows.filter((row) => row[0] === s.n);
    if (!mine.length) continue;
    add(
      `### ${s.n}. ${s.title}`,
      '',
      `\`BENCH_ONLY=${s.n} npm run bench\`: ${s.how}.`,
      '',
      mdTable(
        ['measure', 'agentq', 'baselines', 'ratio'],
        mine.map(([, measure, ...cells]) => [measure.replace(/^ {2}/, '↳ '), ...cells]),
      ),
      '',
    );
    const units = s.n === '1' ? r.overhead?.units : undefined;
    if (units)
      add(
        'What one operation costs the benchmark process, one at a time (client CPU and wall time):',
        '',
        mdTable(
          ['operation', 'CPU (ms)', 'wall (ms)'],
          units.map((u) => [u.label, fmt(u.cpuMs), fmt(u.wallMs)]),
        ),
        '',
      );
  }
  add(
    '## Targets',
    '',
    mdTable(
      ['target', 'measured', ''],
      d.targets.map((t) => [t.name, t.value, t.ok ? 'met' : 'not met']),
    ),
    '',
  );
  const first = r.throughput?.[0];
  if (first) {
    add(
      `## CPU per run by process (scenario 2, ${first.workers} agent-worker${first.workers > 1 ? 's' : ''})`,
      '',
      'User + system CPU from `/proc/<pid>/stat` over the window, ms a run:',
      '',
      mdTable(CPU_COLUMNS, cpuTable(first)),
      '',
    );
  }
  const cc = r.concurrency;
  if (cc) {
    add(
      `## Memory (scenario 3, ${largest(cc.sizes)} runs at once)`,
      '',
      `Resident memory (VmHWM) of each process with AGENT_CONCURRENCY=${cc.config.agentConcurrency}, TOOL_CONCURRENCY=${cc.config.toolConcurrency}; the live heap is what a full collection left at the end:`,
      '',
      mdTable(MEMORY_COLUMNS, memoryTable(cc.memory, cc.v8Defaults.memory)),
      '',
    );
  }
  if (r.redis) {
    add(
      `## Redis round trips and commands a step, by process (scenario 4, ${r.redis.agentq.batch.runs} runs at once)`,
      '',
      mdTable(['system', 'process', 'round trips', 'commands'], redisBreakdown(r, 'batch').procs),
      '',
    );
  }
  add(
    '## Other benchmarks',
    '',
    mdTable(
      ['command', 'measures', 'figures'],
      OTHERS.map(([command, what, page]) => [`\`${command}\``, what, page ? `[${page.split('#')[0]}](${page})` : '']),
    ),
    '',
  );
  if (r.foreign?.length) {
    const most = r.foreign.reduce((a, b) => (b.share > a.share ? b : a));
    const noisy = r.foreign.filter((f) => f.share > 0.1);
    add(
      '## Noise',
      '',
      `The machine is shared. Before each measurement the benchmark waits for other processes to use less than 10 % of it; during the measurements they used at most ${pct(most.share)} (${most.label})${noisy.length ? `, over 10 % during ${noisy.map((f) => `${f.label} (${pct(f.share)})`).join('; ')}: read those figures with care` : ''}.`,
      '',
    );
  }
  return `${out.join('\n')}`;
}
