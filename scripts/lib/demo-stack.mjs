// What `npm run demo` runs agentq on: the scripted model, the real MCP memory server seeded with
// Bob, and the three built services on a throwaway QUEUE_PREFIX; and how to take it all down.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoAgent } from './demo-agent.mjs';
import { deleteKeys } from './redis.mjs';
import {
  describeExit,
  freePort,
  killServiceGroup,
  linePrefix,
  ROOT,
  SERVICES,
  startService,
  stopServices,
} from './services.mjs';

export const MEMORY_SERVER = join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
/** The builds the demo needs besides the services'. */
export const DEMO_BUILDS = [
  join(ROOT, 'packages/scripted-llm/dist/index.js'),
  join(ROOT, 'packages/client/dist/index.js'),
];

// The knowledge graph the memory server starts with, in its JSON Lines format.
const SEED = [
  { type: 'entity', name: 'Bob', entityType: 'person', observations: ['works at Acme', 'email bob@acme.test'] },
  { type: 'entity', name: 'Alice', entityType: 'person', observations: ['works at Globex', 'email alice@globex.test'] },
  { type: 'entity', name: 'Acme', entityType: 'company', observations: ['sells anvils'] },
];

/**
 * Starts the stack. The services get `env` (the demo's own environment, less what it overrides);
 * `onLine(service, line)` receives what they print; `onExit(message)` is called if one stops
 * while the stack is not being stopped.
 */
export async function startDemoStack({ redisUrl, env, logLevel, onLine, onExit }) {
  const prefix = `demo-${randomBytes(4).toString('hex')}`;
  const tmp = mkdtempSync(join(tmpdir(), 'agentq-demo-'));
  const memoryFile = join(tmp, 'memory.jsonl');
  const mcpConfig = join(tmp, 'mcp.json');
  writeFileSync(memoryFile, SEED.map((e) => JSON.stringify(e)).join('\n'));
  const memory = { command: process.execPath, args: [MEMORY_SERVER], env: { MEMORY_FILE_PATH: memoryFile } };
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { memory } }));

  let llm, port;
  try {
    // Imported here, not at the top, so that the demo can report a missing build first.
    const { startScriptedLlm } = await import('@agentq/scripted-llm');
    llm = await startScriptedLlm({ host: '127.0.0.1', handler: demoAgent });
    port = await freePort();
  } catch (err) {
    await llm?.close();
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  const serviceEnv = {
    ...env,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    PORT: String(port),
    HOST: '127.0.0.1',
    MODEL: 'demo-model',
    OPENAI_BASE_URL: llm.baseURL,
    OPENAI_API_KEY: 'demo',
    MCP_CONFIG: mcpConfig,
    LOG_LEVEL: logLevel,
  };
  const recent = Object.fromEntries(SERVICES.map((s) => [s, []]));
  const services = SERVICES.map((name) =>
    startService(name, {
      env: serviceEnv,
      onLine: (line) => {
        recent[name].push(line);
        if (recent[name].length > 40) recent[name].shift();
        onLine(name, line);
      },
    }),
  );
  let stopping = null;
  for (const svc of services) svc.exited.then((how) => stopping || onExit(`${svc.name} ${describeExit(how)}`));

  return {
    apiUrl: `http://127.0.0.1:${port}`,
    prefix,
    modelUrl: llm.baseURL,
    pids: services.map((s) => s.child.pid),

    /** An entity as the memory server's file holds it now. */
    entity(name) {
      const lines = readFileSync(memoryFile, 'utf8')
        .split('\n')
        .filter((l) => l.trim());
      return lines.map((l) => JSON.parse(l)).find((e) => e.type === 'entity' && e.name === name);
    },

    /** Writes the services' last lines of output, for a failure. */
    dumpLogs(write) {
      for (const name of SERVICES) for (const line of recent[name]) write(`${linePrefix(name)}${line}`);
    },

    /** Stops the services (SIGTERM, 15 s grace), the model, deletes the keys; resolves to what failed. */
    stop() {
      stopping ??= (async () => {
        const steps = [
          ['stopping the services', () => stopServices(services, { signal: 'SIGTERM', graceMs: 15_000 })],
          ['closing the scripted model', () => llm.close()],
          [`deleting the ${prefix}:* keys`, () => deleteKeys(redisUrl, prefix)],
        ];
        const problems = [];
        for (const [what, step] of steps) await step().catch((err) => problems.push(`${what}: ${err.message}`));
        rmSync(tmp, { recursive: true, force: true });
        return problems;
      })();
      return stopping;
    },

    /** The last resort when the process exits: kills what still runs, with what it spawned. */
    kill() {
      for (const svc of services) if (svc.running) killServiceGroup(svc);
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}
