#!/usr/bin/env node
// `npm run demo`: agentq end to end, offline, in a few seconds, used through its own client
// (@agentq/client) the way any program would use it.
//
// A scripted OpenAI-compatible model (lib/demo-agent.mjs) plays the agent for "Find Bob and
// update his company to EPAM"; the real MCP memory server holds a knowledge graph seeded with
// Bob; the api, agent-worker and tool-worker run as the built services on the Redis at
// REDIS_URL under a throwaway QUEUE_PREFIX whose keys are deleted at the end (lib/demo-stack.mjs).
import { DEMO_BUILDS, startDemoStack } from './lib/demo-stack.mjs';
import { pingRedis } from './lib/redis.mjs';
import { linePrefix, missingBuilds } from './lib/services.mjs';

// The demo's settings: the one place it reads its environment.
const env = process.env;
const truthy = (v) => /^(1|true|yes|on)$/i.test(v ?? '');
const settings = {
  redisUrl: env.REDIS_URL || 'redis://127.0.0.1:6379',
  /** Keep the services up after the run, to browse the dashboard, until Ctrl-C. */
  keepRunning: truthy(env.DEMO_KEEP_RUNNING),
  /** Show the services' own log lines. */
  verbose: truthy(env.DEMO_VERBOSE),
  logLevel: env.LOG_LEVEL || 'warn',
  color: !env.NO_COLOR,
  // The services inherit the rest, less API_KEYS: the demo's API is on loopback and open.
  serviceEnv: Object.fromEntries(Object.entries(env).filter(([name]) => name !== 'API_KEYS')),
};

const TASK = 'Find Bob and update his company to EPAM';
const T0 = performance.now();
const elapsed = () => `${((performance.now() - T0) / 1000).toFixed(2)} s`;
const say = (line = '') => process.stdout.write(`${line}\n`);

const missing = missingBuilds(DEMO_BUILDS);
if (missing.length) {
  process.stderr.write(
    `demo: ${missing.join(', ')} not found: run npm run build first (npm run demo does it for you)\n`,
  );
  process.exit(1);
}
if (!(await pingRedis(settings.redisUrl))) {
  process.stderr.write(
    `demo: no Redis answers at ${settings.redisUrl}.\nThe demo needs a Redis. Any one of:\n` +
      '  - run one locally:           redis-server\n' +
      '  - or with Docker:            docker compose up -d redis\n' +
      '  - or point at another one:   REDIS_URL=redis://host:6379 npm run demo\n',
  );
  process.exit(1);
}
// Imported once the build is known to be there, so that a missing one gets the message above.
const { AgentqClient, progressPrinter, styleFor } = await import('@agentq/client');
const style = styleFor(process.stdout, settings.color);

let phase = 'starting';
let stack = null;
let failing = false;

/** Stops everything the demo started; says what could not be done and returns how many. */
async function stopAll() {
  const problems = (await stack?.stop()) ?? [];
  for (const p of problems) say(style.bad(`cleanup: ${p}`));
  return problems.length;
}

async function fail(message, code = 1) {
  if (failing) return;
  failing = true;
  say();
  say(style.bad(`demo failed while ${phase}: ${message}`));
  if (code !== 130) stack?.dumpLogs(say);
  await stopAll();
  say(style.dim(`cleaned up (${elapsed()})`));
  process.exit(code);
}

// Ctrl-C stops everything cleanly; a second one, not npm's echo of the first, kills at once.
let interruptedAt = 0;
let stopKeeping = null;
process.on('SIGINT', () => {
  if (interruptedAt && Date.now() - interruptedAt > 1000) {
    stack?.kill();
    process.exit(130);
  }
  if (interruptedAt) return;
  interruptedAt = Date.now();
  if (stopKeeping) stopKeeping();
  else void fail('interrupted (Ctrl-C)', 130);
});
process.on('SIGTERM', () => void fail('terminated (SIGTERM)', 143));
process.on('exit', () => stack?.kill());

async function main() {
  say(style.bold('agentq demo') + style.dim(`: "${TASK}"`));
  phase = 'starting the services';
  stack = await startDemoStack({
    redisUrl: settings.redisUrl,
    env: settings.serviceEnv,
    logLevel: settings.logLevel,
    onLine: (service, line) => settings.verbose && say(`${linePrefix(service)}${line}`),
    onExit: (what) => void fail(what),
  });
  say(
    style.dim(
      `Redis ${settings.redisUrl}, QUEUE_PREFIX=${stack.prefix}; ` +
        `api, agent-worker, tool-worker (pids ${stack.pids.join(', ')}); model at ${stack.modelUrl}`,
    ),
  );

  // From here on agentq is used only through its client.
  const client = new AgentqClient({ baseUrl: stack.apiUrl });

  phase = 'waiting for the API and the memory tools';
  const tools = await client.waitForReady({ tools: ['memory__search_nodes'], timeoutMs: 20_000 });
  say(style.dim(`ready after ${elapsed()}; tools: ${tools.map((t) => t.name).join(', ')}`));
  say();

  phase = 'running the agent';
  const run = await client.createRun({
    input: TASK,
    instructions:
      'You keep the CRM in the memory knowledge graph up to date. ' +
      'Look people up before changing them and check your changes.',
    tools: ['memory__*'],
    max_depth: 10,
    metadata: { source: 'npm run demo' },
  });
  // Each step and each tool call as it happens, with what the tool returned, in the CLI's
  // progress lines. The stream ends after the run's terminal event.
  const print = progressPrinter(say, { style, toolOutputs: true });
  for await (const event of client.streamEvents(run.id, { signal: AbortSignal.timeout(30_000) })) print(event);
  // The finished run: at once here, since the stream has seen it end; a program that does not
  // follow the events calls only this, which polls until the run ends or the deadline.
  const done = await client.waitForRun(run.id, { timeoutMs: 30_000 });

  phase = 'checking the result';
  if (done.status !== 'completed')
    throw new Error(`the run ended ${done.status} (${done.stop_reason}): ${JSON.stringify(done.error)}`);
  say();
  say(`${style.bold('answer')}  ${done.output.content}`);

  // The run's record: its steps tell where the time went (the usage is in the summary above).
  const steps = await client.getSteps(run.id);
  const ms = (from, to) => Date.parse(to) - Date.parse(from);
  const modelMs = steps.reduce((sum, s) => sum + ms(s.started_at, s.completed_at), 0);
  const calls = steps.flatMap((s) => s.tool_calls);
  const toolMs = calls.reduce((sum, c) => sum + (c.duration_ms ?? 0), 0);
  say(
    style.dim(
      `from its steps: the model took ${modelMs} ms in ${steps.length} steps, ` +
        `the tools ${toolMs} ms in ${calls.length} calls over ${done.depth} rounds, ` +
        `the run ${ms(done.created_at, done.completed_at)} ms in all`,
    ),
  );

  // Trust, but verify: the memory server's own file must now say EPAM and no longer Acme.
  const bob = stack.entity('Bob');
  if (!bob?.observations.includes('works at EPAM') || bob.observations.includes('works at Acme')) {
    throw new Error(`the memory file does not show the update: Bob is ${JSON.stringify(bob)}`);
  }
  say(style.dim(`checked the memory server's file: Bob ${JSON.stringify(bob.observations)}`));
  say();
  const keep = settings.keepRunning ? '' : style.dim('  (up while the demo runs; DEMO_KEEP_RUNNING=1 keeps it up)');
  say(`the run in the inspector: ${style.bold(`${client.baseUrl}/ui/runs/${done.id}`)}${keep}`);
  say(`dashboard: ${style.bold(`${client.baseUrl}/admin/queues/`)}`);
}

try {
  await main();
} catch (err) {
  await fail(err.message);
}

if (settings.keepRunning) {
  phase = 'keeping the services running';
  say(style.bold('DEMO_KEEP_RUNNING: the services stay up; press Ctrl-C to stop them and clean up.'));
  await new Promise((resolve) => (stopKeeping = resolve));
  say();
}

phase = 'stopping';
if (await stopAll()) process.exit(1);
say(style.ok('demo OK') + style.dim(` in ${elapsed()} (services stopped, ${stack.prefix}:* keys deleted)`));
process.exit(0);
