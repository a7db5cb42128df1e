// BENCHMARKS.md: the results page, rendered from a run's results, the figures derived from them
// and bench/findings.md.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fmt, mdTable, pct } from './stats.mjs';
import { CPU_COLUMNS, cpuTable, redisBreakdown } from './tables.mjs';
import { ROOT } from './workload.mjs';

const memTable = (mem) =>
  mdTable(
    [
      'process',
      'RSS when started (MB)',
      'peak RSS (MB)',
      'RSS at the end (MB)',
      'V8 heap used / total at the end (MB)',
      'live heap after a full GC (MB)',
    ],
    mem.map((m) => [
      m.name,
      fmt(m.started),
      fmt(m.peak),
      fmt(m.rss),
      m.heap ? `${fmt(m.heap.usedMB)} / ${fmt(m.heap.totalMB)}` : '–',
      fmt(m.heap?.liveMB),
    ]),
  );

export function markdown(r, d, header, rows) {
  const m = r.machine;
  const c = r.config;
  const out = [];
  out.push('# Benchmarks');
  out.push('');
  out.push(
    `What durability costs agentq, what it does per second, and how it scales, measured by \`npm run bench\` on ${r.startedAt.slice(0, 16).replace('T', ' ')} UTC (${fmt(r.durationS)} s, commit ${m.commit}). Every number on this page comes from that one run on one machine; this file and \`bench/results/\` are rewritten by each full run.`,
  );
  out.push('');
  out.push('![agentq benchmarks](bench/results/chart.svg)');
  out.push('');
  out.push('## Machine');
  out.push('');
  out.push(
    mdTable(
      ['', ''],
      [
        ['CPU', `${m.nproc} cores (\`nproc\`), ${m.cpu}`],
        ['RAM', `${fmt(m.ramGiB)} GiB`],
        ['OS', m.os],
        ['Node', m.node],
        ['Redis', `${m.redis}: ${m.redisSetup}`],
        [
          'libraries',
          `bullmq ${m.bullmq}, ioredis ${m.ioredis}, @modelcontextprotocol/sdk ${m.mcpSdk}, openai ${m.openai}`,
        ],
      ],
    ),
  );
  out.push('');
  out.push(
    'Everything runs on this one machine: Redis, the services, the scripted model, the MCP server and the benchmark client share its cores, so the numbers are those of a whole system on 2 cores, not of a worker with a machine to itself.',
  );
  out.push('');
  out.push('## Commands');
  out.push('');
  out.push('```sh');
  out.push('npm run bench                      # build, then every scenario (≈ 5–8 minutes); rewrites this file');
  out.push(
    'BENCH_QUICK=1 npm run bench        # smoke version: 100 runs instead of 1,000, no repetitions (≈ 2 minutes)',
  );
  out.push('BENCH_MCP=http npm run bench       # the no-op MCP server over Streamable HTTP instead of stdio');
  out.push('BENCH_ONLY=2,4 npm run bench       # some scenarios only (into bench/results/partial.json)');
  out.push('BENCH_PROFILE=1 npm run bench      # also CPU profiles of the services (bench/results/profiles)');
  out.push('node bench/profile-summary.mjs bench/results/profiles/<file>.cpuprofile');
  out.push(
    'BENCH_NODE_OPTIONS="--max-old-space-size=1024" npm run bench   # NODE_OPTIONS for the services (one that sizes the heap replaces the shipped heap flags)',
  );
  out.push(
    'N=200 node bench/timeline.mjs            # where the time of a step goes, one run at a time (BARE=1: bare BullMQ, LOOP=1: the BullMQ loop)',
  );
  out.push(
    'BENCH_REPORT_ONLY=1 node bench/run.mjs   # re-render this file and the chart from bench/results/latest.json',
  );
  out.push('```');
  out.push('');
  out.push(
    'It needs `redis-server` on the PATH (it starts its own on a free loopback port; `BENCH_REDIS_URL` uses another Redis instead, under a unique key prefix, deleted afterwards). Everything talks only to 127.0.0.1, and every process it starts is stopped at the end. It is not part of `npm test`.',
  );
  out.push('');
  out.push('## Setup');
  out.push('');
  out.push(
    `- **Workload**: every run is ${c.rounds} rounds of ${c.fanout} parallel tool calls and a final answer: ${c.steps} model steps and ${c.toolCallsPerRun} tool calls. "Per step" divides a run by ${c.steps}.`,
  );
  out.push(
    "- **Model**: the project's scripted OpenAI-compatible server (`packages/scripted-llm`) in its own process, streaming its answers; its latency is 0 ms or 500 ms per call (`bench/llm-server.mjs`).",
  );
  out.push(
    `- **Tools**: a no-op MCP server on the official SDK (\`bench/noop-mcp-server.mjs\`, one tool that answers "ok"), reached over **${c.mcpTransport}**${c.mcpTransport === 'stdio' ? ' (each tool-worker spawns its own)' : ' (one server process, stateless, JSON responses)'}.`,
  );
  out.push(
    `- **agentq**: the built services as processes (\`node services/<name>/dist/main.js\`): one api, one or two agent-workers, one tool-worker, \`LOG_LEVEL=warn\`, default concurrency (100 per worker) unless said otherwise, with the heap flags \`npm start\` and the Dockerfile give them (\`NODE_OPTIONS="${r.config?.heapFlags ?? '(none recorded)'}"\`; scenario 3 also without). Runs are submitted with \`POST /v1/runs\`.`,
  );
  out.push(
    "- **In-process baseline**: the seeds' recursive loop in the benchmark process (`bench/lib/inprocess-loop.mjs`): the openai SDK against the same scripted model, the MCP SDK client against the same MCP server, recurse. No queue, no store: a crash loses the run.",
  );
  out.push(
    "- **Bare BullMQ baseline**: the job graph of a plain BullMQ agent loop (one agent-turn job per model step; each round a FlowProducer flow whose parent is the next step's job and whose children are 3 tool jobs, one per call; agentq runs such a round's 3 calls in one tool-round job, its children are 1), the same job options and lock settings, with no-op processors in separate agent and tool processes (`bench/bare-worker.mjs`). No model, no MCP, no run store: the queue's own cost.",
  );
  out.push(
    "- **BullMQ loop baseline**: the same processes and job graph as bare BullMQ, whose processors also do the agent loop's work (`bench/bare-worker.mjs` with `WORK=1`): the agent job calls the scripted model (openai SDK, streamed) with the transcript it carries in its job data plus its children's return values, each tool job calls the no-op MCP server (MCP SDK client, its own server over the same transport). No run store, no events, no budgets, no at-most-once bookkeeping, no API: what moving the seeds' loop onto BullMQ costs before any of agentq's guarantees. Its processes, like bare BullMQ's, run with V8's default heap sizing; in scenario 3 its agent worker has a slot per run, as agentq's has.",
  );
  out.push(
    `- **One at a time (scenario 1)**: the in-process loop, bare BullMQ, the BullMQ loop and agentq are all up at once and alternate in ${r.overhead.interleaved.blocks} blocks of ${r.overhead.interleaved.perBlock} runs each (in a rotating order), so that the machine's drift during the scenario weighs on all four alike; with the 500 ms model, the in-process loop, the BullMQ loop and agentq alternate run by run.`,
  );
  out.push(
    `- **Repetitions**: every many-runs measurement is made ${r.config.repeat ?? 1} time(s) on the same processes and the fastest is kept (other processes on a shared machine only ever slow a run down; the first repetition also still warms the JIT); the tables list every repetition.${r.concurrency?.alternated ? ` In scenario 3 the ${r.concurrency.sizes.at(-1)}-run windows of agentq and of the in-process loop alternate (in-process, agentq, agentq, in-process), both systems' processes up throughout, so that the machine's drift weighs on both alike.` : ''}`,
  );
  out.push(
    "- **Seeing a run finish**: one at a time, agentq runs are followed by reading the run's event stream straight from Redis (`XREAD BLOCK`, what an SSE client sees, without the API in between); bare and BullMQ-loop runs by `QueueEvents` for the last step's job. With many runs in flight, the client polls one `ZCARD` of the agent queue's completed set every 25 ms (one command, whatever the number of runs) and afterwards reads each run's `created_at`/`completed_at` (agentq run record) or first job `timestamp`/last job `finishedOn` (bare, BullMQ loop): latencies are the system's own timestamps, and polling adds neither load per run nor its period to them. Throughput counts from the first submission to the last completion.",
  );
  out.push(
    "- **Redis CPU** is the redis-server process's CPU time (`/proc`), AOF writes included: with few runs in flight each round trip gets its own AOF write, which is why Redis CPU per step is much higher one at a time than under load.",
  );
  const twice = r.redis?.again
    ? "each system is measured twice, in the order bare BullMQ, BullMQ loop, agentq, agentq, BullMQ loop, bare BullMQ, each time on an emptied Redis with its AOF rewritten, since Redis's speed drifts from one window to the next; Redis CPU per step is the mean of a system's two windows (both in brackets), the other figures are from its first. It counts with "
    : 'each system measured once, on an emptied Redis; ';
  out.push(
    '- **Redis cost (scenario 4)**: ' +
      twice +
      "`INFO commandstats` before and after (on the benchmark's own Redis, the client's own commands subtracted), which counts every command Redis executed, including those run inside Lua scripts; and a client-side probe (`bench/lib/redis-probe.mjs`, loaded with `NODE_OPTIONS=--import` into the services for that scenario only) that counts what each process sends: commands by name (scripts by name) and round trips (what one connection sends before any reply can have come back: the commands and pipelines handed to it in one stretch of code, which leave together; until session 15, each command sent on its own counted as one).",
  );
  if (r.redisBound && !r.redisBound.skipped) {
    const b = r.redisBound;
    const busy = (windows) => pct(Math.min(...windows.map((w) => w.redisBusy)));
    if (b.pairs) {
      const all = [...b.pairs.loop, ...b.pairs.bare].flatMap((p) => Object.values(p));
      out.push(
        `- **Redis-bound (scenario 5)**: each system on a Redis of its own capped at ${Math.round(b.cap * 100)} % of one core (a cgroup CPU quota over 10 ms periods, \`bench/lib/redis-cap.mjs\`), so that Redis, not the 2 cores the workers share, is what limits it, as on a Redis shard that serves many worker hosts; agentq measured side by side with the BullMQ loop, then with bare BullMQ (\`bench/lib/paired.mjs\`, as \`npm run bench:paired\`): in each window both systems of a pair get ${b.runs} runs submitted at once, each from an emptied Redis and a fresh stack, so that whatever else the host does slows both alike (one system after another, as until session 22, a step's Redis time moved by a tenth or more between windows here). ${b.pairs.loop.length} window(s) a pair; runs/s and Redis CPU a step are the means of a system's windows (each in brackets, agentq's beside the loop first), the ratios the means of the windows' ratios. In every window each Redis was busy at least ${busy(all)} of its cap (below 100 %, a system was partly held up by something else).`,
      );
    } else {
      out.push(
        `- **Redis-bound (scenario 5)**: the benchmark's Redis capped at ${Math.round(b.cap * 100)} % of one core (a cgroup CPU quota over 10 ms periods, \`bench/lib/redis-cap.mjs\`), so that Redis, not the 2 cores the workers share, is what limits each system, as on a Redis shard that serves many worker hosts; ${b.runs} runs submitted at once to each system, twice, in the order bare BullMQ, BullMQ loop, agentq, agentq, BullMQ loop, bare BullMQ, each on an emptied Redis. Runs/s then say how many runs a unit of Redis CPU carries, with commands batched as a busy Redis batches them; figures are the means of the two windows (both in brackets). In every window Redis was busy at least ${busy(['agentq', 'bare', 'loop'].flatMap((k) => b[k]))} of its cap (below 100 %, a system was partly held up by something else).`,
      );
    }
  }
  out.push('');
  out.push('## Results');
  out.push('');
  out.push(
    mdTable(
      header,
      rows.map((row) => row.map((cell) => String(cell).replace(/^ {2}/, '↳ '))),
    ),
  );
  out.push('');
  out.push('## Targets');
  out.push('');
  out.push(
    mdTable(
      ['target', 'measured', ''],
      d.targets.map((t) => [t.name, t.value, t.ok ? 'met' : 'NOT met']),
    ),
  );
  out.push('');
  if (r.overhead?.units) {
    out.push('## Unit costs');
    out.push('');
    out.push(
      'Measured in the benchmark process, one operation at a time (client-side CPU and wall time per operation); they explain most of the CPU tables below:',
    );
    out.push('');
    out.push(
      mdTable(
        ['operation', 'CPU (ms)', 'wall (ms)'],
        r.overhead.units.map((u) => [u.label, fmt(u.cpuMs), fmt(u.wallMs)]),
      ),
    );
    out.push('');
  }
  if (r.throughput) {
    out.push('## Where the CPU goes (scenario 2)');
    out.push('');
    out.push('CPU time per run by process (user + system, from `/proc/<pid>/stat`), over the throughput measurement:');
    out.push('');
    for (const t of r.throughput) {
      out.push(`${t.workers} agent-worker${t.workers > 1 ? 's' : ''}, ${t.agentq.n} runs (ms per run):`);
      out.push('');
      out.push(mdTable(CPU_COLUMNS, cpuTable(t)));
      out.push('');
    }
  }
  if (r.concurrency) {
    const cc = r.concurrency;
    out.push('## Memory (scenario 3)');
    out.push('');
    out.push(
      `Peak RSS (VmHWM from \`/proc/<pid>/status\`) of each process after ${cc.sizes.join(' and ')} concurrent runs with a ${cc.modelMs} ms model, one agent-worker with AGENT_CONCURRENCY=${cc.config.agentConcurrency}, TOOL_CONCURRENCY=${cc.config.toolConcurrency}, the services started as \`npm start\` and the Dockerfile start them (\`NODE_OPTIONS="${cc.heapFlags}"\`):`,
    );
    out.push('');
    out.push(memTable(cc.memory));
    out.push('');
    out.push(
      `The same ${cc.sizes.at(-1)} runs with V8's default heap sizing (no heap flags; a larger young generation and no old-space cap), wall time ${fmt(cc.v8Defaults.agentq.wallMs / 1000)} s:`,
    );
    out.push('');
    out.push(memTable(cc.v8Defaults.memory));
    out.push('');
    out.push(
      '"At the end" is after the last run finished, before the services stop; the services run with `--expose-gc` in this scenario so that the probe can force one full collection and report what is still live.',
    );
    out.push('');
  }
  if (r.redis) {
    for (const mode of ['batch', 'sequential']) {
      const br = redisBreakdown(r, mode);
      const a = r.redis.agentq[mode];
      const label = mode === 'batch' ? `${a.runs} runs at once` : `${a.runs} runs one at a time`;
      out.push(`## Redis per step, ${label} (scenario 4)`);
      out.push('');
      out.push(
        "Commands the clients sent, per step, by command (`evalsha:<name>` is a Lua script: BullMQ's, or the run store's `agentq…`):",
      );
      out.push('');
      out.push(mdTable(['command', 'agentq', 'bare BullMQ'], br.sent));
      out.push('');
      out.push('Round trips and commands per step, by process:');
      out.push('');
      out.push(mdTable(['system', 'process', 'round trips', 'commands'], br.procs));
      out.push('');
      out.push(
        "Commands Redis executed per step (`INFO commandstats`, including the commands inside scripts), and agentq's Redis time per step in µs (the time of `evalsha` and `exec` includes that of the commands inside them, which also have rows of their own):",
      );
      out.push('');
      out.push(mdTable(['command', 'agentq', 'bare BullMQ', 'agentq µs'], br.server));
      out.push('');
    }
  }
  if (r.foreign?.length) {
    out.push('## Noise');
    out.push('');
    out.push(
      "The machine is shared (other people's builds and test suites may run on it). Before each measurement the benchmark waits (up to 30 s, 3 minutes in all) until processes other than its own use less than 10 % of the machine, and it records how much they used during the measurement (busy time from `/proc/stat` minus the CPU time of the benchmark's own processes):",
    );
    out.push('');
    out.push(
      mdTable(
        ['measurement', 'other processes, share of the machine'],
        r.foreign.map((f) => [f.label, pct(f.share)]),
      ),
    );
    out.push('');
  }
  const findings = join(ROOT, 'bench', 'findings.md');
  if (existsSync(findings)) {
    out.push(readFileSync(findings, 'utf8').trim());
    out.push('');
  }
  return `${out.join('\n')}\n`;
}
