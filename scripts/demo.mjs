#!/usr/bin/env node
// `npm run demo`: the whole system end to end, offline, in a few seconds.
//
// A scripted OpenAI-compatible model (packages/scripted-llm) plays the agent for the request
// "Find Bob and update his company to EPAM". The real MCP memory server
// (@modelcontextprotocol/server-memory, stdio) holds a small knowledge graph seeded with Bob.
// The api, agent-worker and tool-worker run as the built services, on the Redis at REDIS_URL
// (default redis://127.0.0.1:6379) under a throwaway QUEUE_PREFIX that is deleted at the end.
//
// Env: REDIS_URL; DEMO_KEEP_RUNNING=1 keeps the services up after the run (Ctrl-C stops them);
// DEMO_VERBOSE=1 streams the services' logs (LOG_LEVEL, default warn).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { describeExit, freePort, killServiceGroup, linePrefix, missingBuilds, ROOT, SERVICES, startService, stopServices } from './lib/services.mjs';

const T0 = performance.now();
const TIMEOUT_MS = Number(process.env.DEMO_TIMEOUT_MS) || 60_000;
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const truthy = (v) => /^(1|true|yes|on)$/i.test(v ?? '');
const KEEP_RUNNING = truthy(process.env.DEMO_KEEP_RUNNING);
const VERBOSE = truthy(process.env.DEMO_VERBOSE);
const TASK = 'Find Bob and update his company to EPAM';
const MEMORY_SERVER = join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
const SCRIPTED_LLM = join(ROOT, 'packages/scripted-llm/dist/index.js');

const tty = process.stdout.isTTY;
const style = (code) => (s) => (tty ? `\x1b[${code}m${s}\x1b[0m` : String(s));
const bold = style(1);
const dim = style(2);
const green = style(32);
const red = style(31);
const cyan = style(36);
const say = (s = '') => process.stdout.write(`${s}\n`);
const elapsed = () => `${((performance.now() - T0) / 1000).toFixed(2)} s`;

// ---------------------------------------------------------------------------------------------
// Preconditions: a build and a Redis.

const missing = missingBuilds([SCRIPTED_LLM]);
if (missing.length) {
  process.stderr.write(`demo: ${missing.join(', ')} not found: run npm run build first (npm run demo does it for you)\n`);
  process.exit(1);
}

/** True when `url` answers PING within `timeoutMs`. */
async function pingRedis(url, timeoutMs = 2000) {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  client.on('error', () => {});
  let timer;
  try {
    const deadline = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
    });
    await Promise.race([client.connect().then(() => client.ping()), deadline]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
    client.disconnect();
  }
}

if (!(await pingRedis(REDIS_URL))) {
  process.stderr.write(
    [
      `demo: no Redis answers at ${REDIS_URL}.`,
      'The demo needs a Redis. Any one of:',
      '  - run one locally:           redis-server',
      '  - or with Docker:            docker compose up -d redis',
      '  - or point at another one:   REDIS_URL=redis://host:6379 npm run demo',
      '',
    ].join('\n'),
  );
  process.exit(1);
}

// ---------------------------------------------------------------------------------------------
// The scripted model: it plays an agent that looks Bob up, replaces his company and reports
// what the tools actually returned.

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const textOf = (content) => (typeof content === 'string' ? content : Array.isArray(content) ? content.map((p) => p?.text ?? '').join('') : '');

/** The tool calls made so far in a request's transcript, each with its result text. */
function toolHistory(req) {
  const results = new Map(req.messages.filter((m) => m?.role === 'tool').map((m) => [m.tool_call_id, textOf(m.content)]));
  const calls = [];
  for (const m of req.messages) {
    if (m?.role !== 'assistant') continue;
    for (const tc of m.tool_calls ?? []) {
      calls.push({ name: tc.function?.name, args: parseJson(tc.function?.arguments ?? ''), result: results.get(tc.id) ?? '' });
    }
  }
  return calls;
}

const quote = (list) => list.map((o) => `"${o}"`).join(', ');

/** The next reply of the scripted agent, decided from the transcript alone. */
function demoAgent(req, userText) {
  const ask = userText(req);
  const person = /\bfind\s+([\p{L}\w.-]+)/iu.exec(ask)?.[1] ?? 'Bob';
  const company = /\bcompany to\s+(.+?)[.!]?\s*$/i.exec(ask)?.[1] ?? 'EPAM';
  const newFact = `works at ${company}`;
  const calls = toolHistory(req);
  const last = calls.at(-1);
  const use = (tool, args, content) => ({ content, tool_calls: [{ name: `memory__${tool}`, arguments: args }] });
  const graph = (call) => parseJson(call?.result ?? '') ?? { entities: [] };
  const entity = (call) => graph(call).entities?.find((e) => e.name.toLowerCase() === person.toLowerCase());

  if (last && (/^Error/i.test(last.result) || (last.name !== 'memory__delete_observations' && parseJson(last.result) === undefined))) {
    return { content: `I could not finish: ${last.name} returned an error: ${last.result}` };
  }
  const opened = calls.filter((c) => c.name === 'memory__open_nodes');
  const before = entity(opened[0]);
  if (req.tool_choice === 'none') {
    return { content: `I ran out of steps before finishing. What I know about ${person}: ${quote(entity(opened.at(-1))?.observations ?? [])}.` };
  }
  switch (last?.name) {
    case undefined:
      return use('search_nodes', { query: person }, `Searching the knowledge graph for ${person}.`);
    case 'memory__search_nodes': {
      const hit = entity(last);
      if (!hit) return { content: `There is no one named ${person} in the knowledge graph, so nothing was changed.` };
      return use('open_nodes', { names: [hit.name] }, `Found ${hit.name}; opening the record.`);
    }
    case 'memory__open_nodes': {
      if (opened.length >= 2) {
        // Verified: report what the graph says now, in the tools' own words.
        const added = calls.find((c) => c.name === 'memory__add_observations');
        const removed = calls.find((c) => c.name === 'memory__delete_observations');
        const after = entity(last);
        return {
          content: [
            `Done. I found ${after.name} (${after.entityType}) with ${quote(before.observations)}.`,
            added ? `I added "${newFact}": add_observations returned ${JSON.stringify(parseJson(added.result))}.` : '',
            removed ? `I removed ${quote(removed.args?.deletions?.[0]?.observations ?? [])}: delete_observations said "${removed.result}".` : '',
            `${after.name}'s record now reads: ${quote(after.observations)}.`,
          ]
            .filter(Boolean)
            .join(' '),
        };
      }
      if (!before) return { content: `${person} disappeared from the graph before I could update the record; nothing was changed.` };
      if (before.observations.includes(newFact)) return { content: `${before.name} already ${newFact}: ${quote(before.observations)}. Nothing to change.` };
      return use('add_observations', { observations: [{ entityName: before.name, contents: [newFact] }] }, `Recording that ${before.name} ${newFact}.`);
    }
    case 'memory__add_observations': {
      const stale = before.observations.filter((o) => /^works at /i.test(o) && o !== newFact);
      if (stale.length) return use('delete_observations', { deletions: [{ entityName: before.name, observations: stale }] }, `Removing the old company: ${quote(stale)}.`);
      return use('open_nodes', { names: [before.name] }, 'Checking the record.');
    }
    case 'memory__delete_observations':
      return use('open_nodes', { names: [before.name] }, 'Checking the record.');
    default:
      return { content: `I did not expect to call ${last.name}; stopping here.` };
  }
}

// ---------------------------------------------------------------------------------------------
// Everything we start, and how to take it down again.

const prefix = `demo-${randomBytes(4).toString('hex')}`;
const tmp = mkdtempSync(join(tmpdir(), 'agentq-demo-'));
const memoryFile = join(tmp, 'memory.jsonl');
const mcpConfigFile = join(tmp, 'mcp.json');
const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
redis.on('error', () => {});
/** Each service's recent output, shown when something goes wrong. */
const logs = Object.fromEntries(SERVICES.map((s) => [s, []]));
let services = [];
let llm = null;
let phase = 'starting';
let cleanedUp = null;

function cleanup() {
  cleanedUp ??= (async () => {
    const problems = [];
    const attempt = async (what, fn) => {
      try {
        await fn();
      } catch (err) {
        problems.push(`${what}: ${err.message}`);
      }
    };
    await attempt('stopping the services', () => stopServices(services, { signal: 'SIGTERM', graceMs: 15_000 }));
    await attempt('closing the scripted model', async () => llm?.close());
    await attempt(`deleting the ${prefix}:* keys`, async () => {
      if (redis.status !== 'ready') await redis.connect();
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        if (keys.length) await redis.unlink(...keys);
        cursor = next;
      } while (cursor !== '0');
    });
    redis.disconnect();
    rmSync(tmp, { recursive: true, force: true });
    for (const p of problems) say(red(`cleanup: ${p}`));
  })();
  return cleanedUp;
}

function dumpLogs() {
  for (const name of SERVICES) {
    if (!logs[name].length) continue;
    say(dim(`--- last output of ${name} ---`));
    for (const line of logs[name]) say(`${linePrefix(name)}${line}`);
  }
}

let failing = false;
async function fail(message, code = 1) {
  if (failing) return;
  failing = true;
  say();
  say(red(`demo failed while ${phase}: ${message}`));
  if (code !== 130) dumpLogs();
  await cleanup();
  say(dim(`cleaned up (${elapsed()})`));
  process.exit(code);
}

let firstInterrupt = 0;
process.on('SIGINT', () => {
  // A second Ctrl-C (not the echo of the first one through npm) kills everything at once.
  if (firstInterrupt && Date.now() - firstInterrupt > 1000) {
    for (const s of services) killServiceGroup(s);
    process.exit(130);
  }
  if (firstInterrupt) return;
  firstInterrupt = Date.now();
  if (KEEP_RUNNING && phase === 'keeping the services running') {
    say();
    say('stopping…');
    void cleanup().then(() => process.exit(0));
    return;
  }
  void fail('interrupted (Ctrl-C)', 130);
});
process.on('SIGTERM', () => void fail('terminated (SIGTERM)', 143));
process.on('exit', () => {
  for (const s of services) if (s.running) killServiceGroup(s);
  rmSync(tmp, { recursive: true, force: true });
});
const overall = setTimeout(() => void fail(`timed out after ${TIMEOUT_MS / 1000} s`), TIMEOUT_MS);

// ---------------------------------------------------------------------------------------------
// HTTP helpers.

let apiUrl = '';
async function api(path, init = {}) {
  const res = await fetch(`${apiUrl}${path}`, {
    ...init,
    headers: { 'content-type': 'application/json', ...init.headers },
    signal: AbortSignal.timeout(5000),
  });
  const text = await res.text();
  const body = parseJson(text) ?? text;
  return { status: res.status, body };
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every 100 ms until it returns a truthy value or `ms` pass. */
async function waitFor(what, check, ms = 20_000) {
  const deadline = Date.now() + ms;
  let lastErr = '';
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      lastErr = `: ${err.cause?.code ?? err.message}`;
    }
    await sleep(100);
  }
  throw new Error(`${what} did not happen within ${ms / 1000} s${lastErr}`);
}

const compact = (text, max = 140) => {
  const j = parseJson(text);
  const s = (j === undefined ? String(text) : JSON.stringify(j)).replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};
const ms = (a, b) => Math.round(Date.parse(b) - Date.parse(a));

// ---------------------------------------------------------------------------------------------
// The demo.

async function main() {
  say(bold('agentq demo') + dim(`: "${TASK}"`));
  say(dim(`Redis ${REDIS_URL}, QUEUE_PREFIX=${prefix}`));

  // The knowledge graph the memory server starts with (its JSON Lines format).
  const seed = [
    { type: 'entity', name: 'Bob', entityType: 'person', observations: ['works at Acme', 'email bob@acme.test'] },
    { type: 'entity', name: 'Alice', entityType: 'person', observations: ['works at Globex', 'email alice@globex.test'] },
    { type: 'entity', name: 'Acme', entityType: 'company', observations: ['sells anvils'] },
  ];
  writeFileSync(memoryFile, seed.map((e) => JSON.stringify(e)).join('\n'));
  writeFileSync(
    mcpConfigFile,
    JSON.stringify({ mcpServers: { memory: { command: process.execPath, args: [MEMORY_SERVER], env: { MEMORY_FILE_PATH: memoryFile } } } }, null, 2),
  );

  phase = 'starting the scripted model';
  const { startScriptedLlm, userText } = await import(pathToFileURL(SCRIPTED_LLM).href);
  llm = await startScriptedLlm({ host: '127.0.0.1', handler: (req) => demoAgent(req, userText) });

  phase = 'starting the services';
  const port = await freePort();
  apiUrl = `http://127.0.0.1:${port}`;
  const { API_KEYS: _keys, ...inherited } = process.env; // the demo's API is local and open
  const env = {
    ...inherited,
    REDIS_URL,
    QUEUE_PREFIX: prefix,
    PORT: String(port),
    HOST: '127.0.0.1',
    MODEL: 'demo-model',
    OPENAI_BASE_URL: llm.baseURL,
    OPENAI_API_KEY: 'demo',
    MCP_CONFIG: mcpConfigFile,
    LOG_LEVEL: process.env.LOG_LEVEL || 'warn',
  };
  services = SERVICES.map((name) =>
    startService(name, {
      env,
      onLine: (line) => {
        logs[name].push(line);
        if (logs[name].length > 40) logs[name].shift();
        if (VERBOSE) say(`${linePrefix(name)}${line}`);
      },
    }),
  );
  for (const svc of services) {
    svc.exited.then((how) => {
      if (!cleanedUp) void fail(`${svc.name} ${describeExit(how)}`);
    });
  }
  say(dim(`started ${SERVICES.join(', ')} (pids ${services.map((s) => s.child.pid).join(', ')}); model at ${llm.baseURL}`));

  phase = 'waiting for the API and the tool catalog';
  await waitFor('GET /readyz → 200', async () => (await api('/readyz')).status === 200);
  const tools = await waitFor('GET /v1/tools listing the memory tools', async () => {
    const { body } = await api('/v1/tools');
    const names = (body?.data ?? []).map((t) => t.name).filter((n) => n.startsWith('memory__'));
    return names.includes('memory__search_nodes') ? names : null;
  });
  say(dim(`ready after ${elapsed()}; tools: ${tools.join(', ')}`));
  say();

  phase = 'running the agent';
  const started = performance.now();
  const created = await api('/v1/runs', {
    method: 'POST',
    body: JSON.stringify({
      input: TASK,
      instructions: 'You keep the CRM in the memory knowledge graph up to date. Look people up before changing them and check your changes.',
      tools: ['memory__*'],
      max_depth: 10,
      metadata: { source: 'npm run demo' },
    }),
  });
  if (created.status !== 202) throw new Error(`POST /v1/runs → ${created.status}: ${JSON.stringify(created.body)}`);
  const runId = created.body.id;
  say(`${bold('run')} ${cyan(runId)} ${created.body.status}`);

  // Follow the run by polling its steps; print each model step and each finished tool call once.
  const shownSteps = new Set();
  const shownCalls = new Set();
  const printNew = (steps) => {
    for (const step of steps) {
      if (!shownSteps.has(step.depth)) {
        shownSteps.add(step.depth);
        const wants = step.tool_calls.length ? `→ ${step.tool_calls.map((c) => c.name).join(', ')}` : '→ final answer';
        say(`  ${bold(`step ${step.depth}`)}  model ${ms(step.started_at, step.completed_at)} ms, ${step.usage.prompt_tokens}+${step.usage.completion_tokens} tokens  ${wants}`);
      }
      for (const call of step.tool_calls) {
        if (shownCalls.has(call.id) || (call.status !== 'completed' && call.status !== 'failed')) continue;
        shownCalls.add(call.id);
        const mark = call.is_error || call.status === 'failed' ? red('✗') : green('✓');
        say(`    ${mark} ${call.name} ${dim(compact(call.arguments, 100))}  ${call.duration_ms} ms${call.attempts > 1 ? `, ${call.attempts} attempts` : ''}`);
        say(`      ${dim('→ ' + compact(call.output ?? ''))}`);
      }
    }
  };
  let run;
  for (;;) {
    const [r, s] = await Promise.all([api(`/v1/runs/${runId}`), api(`/v1/runs/${runId}/steps`)]);
    if (r.status !== 200 || s.status !== 200) throw new Error(`polling the run: ${r.status}/${s.status} ${JSON.stringify(r.status !== 200 ? r.body : s.body)}`);
    printNew(s.body.data);
    run = r.body;
    if (['completed', 'failed', 'cancelled', 'incomplete'].includes(run.status)) {
      printNew((await api(`/v1/runs/${runId}/steps`)).body.data);
      break;
    }
    await sleep(100);
  }
  const runWall = ((performance.now() - started) / 1000).toFixed(2);

  phase = 'checking the result';
  say();
  if (run.status !== 'completed') throw new Error(`run ended ${run.status} (stop_reason ${run.stop_reason}): ${JSON.stringify(run.error)}`);
  say(`${bold('answer')}  ${run.output?.content}`);
  const u = run.usage;
  say(
    dim(
      `run ${run.status} (${run.stop_reason}) in ${runWall} s: ${u.model_calls} model calls, ${u.tool_calls} tool calls, ` +
        `${u.total_tokens} tokens (${u.prompt_tokens} prompt + ${u.completion_tokens} completion)`,
    ),
  );

  // Trust, but verify: the memory server's file must now say EPAM and no longer Acme.
  const bob = readFileSync(memoryFile, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .find((e) => e.type === 'entity' && e.name === 'Bob');
  if (!bob?.observations.includes('works at EPAM') || bob.observations.includes('works at Acme')) {
    throw new Error(`the memory file does not show the update: Bob is ${JSON.stringify(bob)}`);
  }
  say(dim(`checked the memory server's file: Bob ${JSON.stringify(bob.observations)}`));
  say();
  say(`dashboard: ${cyan(`${apiUrl}/admin/queues/`)}${KEEP_RUNNING ? '' : dim('  (up while the demo runs; DEMO_KEEP_RUNNING=1 keeps it up)')}`);
  return runId;
}

try {
  await main();
} catch (err) {
  await fail(err.message);
}
clearTimeout(overall);

if (KEEP_RUNNING) {
  phase = 'keeping the services running';
  say(bold('DEMO_KEEP_RUNNING: the services stay up; press Ctrl-C to stop them and clean up.'));
  await new Promise(() => {}); // until SIGINT
}

phase = 'stopping';
await cleanup();
say(green(`demo OK`) + dim(` in ${elapsed()} (services stopped, ${prefix}:* keys deleted)`));
process.exit(0);
