import { createHash } from 'node:crypto';
import type { RedisClient } from '../infra/redis.js';
import type { AgentDefinition, AgentRecord } from '../core/schemas/agent.js';
import { redisScript } from './redis-script.js';

/**
 * A tenant's agents share one hash tag, so that a write touches the agent and the tenant's index
 * together (one slot on a Redis Cluster).
 */
export function agentKeys(prefix: string, tenant: string) {
  const base = `${prefix}:{ag:${tenant}}`;
  return {
    /** The tenant's agents by name (a sorted set, all scores 0). */
    index: `${base}:agents`,
    /** One agent (a hash): `latest`, `digest`, `current` (the latest version's record), `v:<n>` each version's. */
    agent: (name: string) => `${base}:agent:${name}`,
  };
}

const AGENT_FIELDS = { latest: 'latest', current: 'current', version: (v: number) => `v:${v}` } as const;

/** Saves an agent's next version (see put-agent.lua). */
const putAgent = redisScript({
  file: 'put-agent',
  keys: (k: { agentKey: string; indexKey: string }) => [k.agentKey, k.indexKey],
  args: (a: { name: string; record: string; digest: string; mode: 'create' | 'put' }) => [
    a.name,
    a.record,
    a.digest,
    a.mode,
  ],
  reply: (r) => {
    const [code, version] = r as [number, number];
    return { outcome: (['exists', 'saved', 'unchanged'] as const)[code]!, version };
  },
});

/** What a write of an agent came to: its version saved, or why none was. */
export type AgentWrite =
  | { outcome: 'saved'; agent: AgentRecord }
  | { outcome: 'unchanged'; agent: AgentRecord }
  | { outcome: 'exists'; version: number };

const parse = (json: string | null): AgentRecord | null => (json ? (JSON.parse(json) as AgentRecord) : null);

/**
 * Saved agents: named, versioned definitions of runs, per tenant. Every write makes a version
 * (the one after the latest); versions are kept until the agent is deleted. The latest version
 * is kept twice (as `current` too), so that the run that names an agent reads it in one command.
 */
export class AgentStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private keys(tenant: string) {
    return agentKeys(this.prefix, tenant);
  }

  /**
   * Saves `definition` as the agent's next version. `create` saves only a new agent (else
   * `exists`); `put` creates or replaces, and a definition equal to the latest version's is
   * not saved again (`unchanged`, the latest returned).
   */
  async write(
    tenant: string,
    name: string,
    definition: Omit<AgentDefinition, 'name'>,
    mode: 'create' | 'put',
    now = new Date(),
  ): Promise<AgentWrite> {
    const k = this.keys(tenant);
    const created_at = now.toISOString();
    const body = JSON.stringify({ object: 'agent', name, ...definition });
    const digest = createHash('sha256').update(body).digest('base64url');
    const record = JSON.stringify({ object: 'agent', name, ...definition, created_at });
    const r = await putAgent(
      this.redis,
      { agentKey: k.agent(name), indexKey: k.index },
      { name, record, digest, mode },
    );
    if (r.outcome === 'exists') return { outcome: 'exists', version: r.version };
    if (r.outcome === 'saved')
      return { outcome: 'saved', agent: { ...(JSON.parse(record) as AgentRecord), version: r.version } };
    const latest = await this.get(tenant, name, r.version);
    return latest ? { outcome: 'unchanged', agent: latest } : this.write(tenant, name, definition, mode, now);
  }

  /** The agent at `version`, or its latest; null if there is no such agent or version. */
  async get(tenant: string, name: string, version?: number): Promise<AgentRecord | null> {
    const field = version === undefined ? AGENT_FIELDS.current : AGENT_FIELDS.version(version);
    return parse(await this.redis.hget(this.keys(tenant).agent(name), field));
  }

  /** Several agents at once (one round trip), each at its version or its latest, null where there is none. */
  async getMany(tenant: string, refs: Array<{ name: string; version?: number }>): Promise<Array<AgentRecord | null>> {
    return Promise.all(refs.map((r) => this.get(tenant, r.name, r.version)));
  }

  /** The tenant's agents by name (their latest versions), `limit` after `after`; `next` names the next page's start. */
  async list(
    tenant: string,
    opts: { limit: number; after?: string },
  ): Promise<{ data: AgentRecord[]; next: string | null }> {
    const k = this.keys(tenant);
    const names = await this.redis.zrangebylex(
      k.index,
      opts.after ? `(${opts.after}` : '-',
      '+',
      'LIMIT',
      0,
      opts.limit + 1,
    );
    const page = names.slice(0, opts.limit);
    const agents = await this.getMany(
      tenant,
      page.map((name) => ({ name })),
    );
    return {
      // An agent deleted between the two reads is left out.
      data: agents.filter((a): a is AgentRecord => a !== null),
      next: names.length > opts.limit ? (page.at(-1) ?? null) : null,
    };
  }

  /** The agent's versions, newest first: `limit` of them below `before` (a version); null if there is no such agent. */
  async versions(
    tenant: string,
    name: string,
    opts: { limit: number; before?: number },
  ): Promise<{ data: AgentRecord[]; next: string | null } | null> {
    const key = this.keys(tenant).agent(name);
    const latest = Number((await this.redis.hget(key, AGENT_FIELDS.latest)) ?? 0);
    if (latest === 0) return null;
    const top = Math.min(latest, (opts.before ?? latest + 1) - 1);
    const wanted = Array.from({ length: Math.max(0, Math.min(opts.limit, top)) }, (_, i) => top - i);
    const records = wanted.length ? await this.redis.hmget(key, ...wanted.map(AGENT_FIELDS.version)) : [];
    const data = records.map(parse).filter((a): a is AgentRecord => a !== null);
    const last = wanted.at(-1);
    return { data, next: last !== undefined && last > 1 ? String(last) : null };
  }

  /** Deletes the agent and every version of it; false if there was none. Runs made from it keep what they took. */
  async delete(tenant: string, name: string): Promise<boolean> {
    const k = this.keys(tenant);
    const res = (await this.redis.multi().del(k.agent(name)).zrem(k.index, name).exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    return Number(res[0]?.[1] ?? 0) > 0;
  }
}
