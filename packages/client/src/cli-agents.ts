import { readFileSync, statSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { AgentDefinition } from './agent-types.js';
import type { AgentqClient } from './client.js';
import { table, UsageError, type Io, type Values } from './cli-common.js';
import type { Style } from './progress.js';

/** The largest agent file read (the API takes at most 1 MB of JSON). */
const MAX_AGENT_FILE = 4 * 1024 * 1024;

/**
 * An agent definition from a file: YAML (`.yaml`, `.yml`) or JSON (any other name; "-" reads
 * stdin as YAML, of which JSON is a part). Its name is the file's `name`, else the file's name
 * without its extension.
 */
export function readAgentFile(path: string, io: Io): { name: string; definition: AgentDefinition } {
  let text: string;
  if (path === '-') {
    text = (io.readStdin ?? (() => readFileSync(0, 'utf8')))();
  } else {
    let size: number;
    try {
      size = statSync(path).size;
    } catch (err) {
      throw new UsageError(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    if (size > MAX_AGENT_FILE) throw new UsageError(`${path} is over ${MAX_AGENT_FILE} bytes`);
    text = readFileSync(path, 'utf8');
  }
  const ext = extname(path).toLowerCase();
  let value: unknown;
  try {
    value = ext === '.json' ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 100 });
  } catch (err) {
    throw new UsageError(`${path} is not valid ${ext === '.json' ? 'JSON' : 'YAML'}: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError(`${path} must hold one agent: an object of its fields (name, instructions, model, …)`);
  const { name: inFile, ...definition } = value as Record<string, unknown>;
  const name = typeof inFile === 'string' ? inFile : path === '-' ? '' : basename(path, extname(path));
  if (!name) throw new UsageError(`${path} names no agent: give it a "name" field`);
  return { name, definition: definition as AgentDefinition }; // the API checks each field and names the bad one
}

/** `agentq agents ls|get|put|rm`. */
export async function cmdAgents(
  client: AgentqClient,
  [sub, arg, ...rest]: string[],
  v: Values,
  io: Io,
  style: Style,
): Promise<number> {
  const out = (s: string) => io.stdout.write(`${s}\n`);
  const one = (what: string) => {
    if (!arg || rest.length) throw new UsageError(`agentq agents ${sub} takes one ${what}`);
    return arg;
  };
  switch (sub) {
    case 'ls':
    case 'list': {
      if (arg) throw new UsageError('agentq agents ls takes no argument');
      const agents = [];
      for await (const a of client.agents.listAll()) agents.push(a);
      if (v.json) {
        out(JSON.stringify({ data: agents, next: null }, null, 2));
        return 0;
      }
      const rows = agents.map((a) => [
        a.name,
        `${a.version}`,
        a.model ?? '-',
        (a.description ?? '').split('\n')[0]!.slice(0, 80),
      ]);
      out(rows.length ? table([['NAME', 'VERSION', 'MODEL', 'DESCRIPTION'], ...rows]) : style.dim('no agents'));
      return 0;
    }
    case 'get': {
      const ref = one('agent name (name or name@version)');
      const at = ref.indexOf('@');
      const version = at < 0 ? undefined : Number(ref.slice(at + 1));
      if (version !== undefined && !(Number.isInteger(version) && version >= 1))
        throw new UsageError(`"${ref}": the version after @ must be a whole number from 1`);
      out(JSON.stringify(await client.agents.get(at < 0 ? ref : ref.slice(0, at), version), null, 2));
      return 0;
    }
    case 'put': {
      const { name, definition } = readAgentFile(one('file (YAML or JSON; - for stdin)'), io);
      const agent = await client.agents.put(name, definition);
      for (const w of agent.warnings ?? []) io.stderr.write(`agentq: warning: ${w}\n`);
      if (v.json) out(JSON.stringify(agent, null, 2));
      else out(`${agent.name} version ${agent.version}`);
      return 0;
    }
    case 'rm':
    case 'delete': {
      const name = one('agent name');
      await client.agents.delete(name);
      if (!v.json) out(`deleted ${name}`);
      return 0;
    }
    default:
      throw new UsageError('agentq agents ls | get <name>[@version] | put <file> | rm <name>');
  }
}
