import type { Agent, AgentDefinition, AgentList, ListAgentsParams } from './agent-types.js';
import type { RequestOptions } from './client.js';

type Send = <T>(
  method: string,
  path: string,
  o?: RequestOptions & { body?: unknown; query?: Record<string, string | number | undefined> },
) => Promise<T>;

/** `/v1/agents`: saved agents (`client.agents`). Each write saves a new version. */
export class AgentsApi {
  constructor(private readonly send: Send) {}

  private path(name: string, sub = '') {
    return `/v1/agents/${encodeURIComponent(name)}${sub}`;
  }

  /** Saves version 1 of a new agent; a name in use is a 409 `agent_exists` (use `put`). */
  create(name: string, definition: AgentDefinition, opts: RequestOptions = {}): Promise<Agent> {
    return this.send('POST', '/v1/agents', { ...opts, body: { ...definition, name } });
  }

  /**
   * Creates the agent or saves its next version; a definition equal to the latest version's saves
   * nothing and returns that version.
   */
  put(name: string, definition: AgentDefinition, opts: RequestOptions = {}): Promise<Agent> {
    return this.send('PUT', this.path(name), { ...opts, body: definition });
  }

  /** The agent at `version`, or at its latest. */
  get(name: string, version?: number, opts: RequestOptions = {}): Promise<Agent> {
    return this.send('GET', version === undefined ? this.path(name) : this.path(name, `/versions/${version}`), opts);
  }

  /** One page of agents by name, each at its latest version. */
  list(params: ListAgentsParams = {}, opts: RequestOptions = {}): Promise<AgentList> {
    return this.send('GET', '/v1/agents', { ...opts, query: { limit: params.limit, after: params.after } });
  }

  /** Every agent, page after page as the iteration goes. */
  async *listAll(opts: RequestOptions = {}): AsyncGenerator<Agent> {
    let after: string | undefined;
    do {
      const page = await this.list({ after }, opts);
      yield* page.data;
      after = page.next ?? undefined;
    } while (after);
  }

  /** One page of the agent's versions, newest first. */
  versions(name: string, params: ListAgentsParams = {}, opts: RequestOptions = {}): Promise<AgentList> {
    return this.send('GET', this.path(name, '/versions'), {
      ...opts,
      query: { limit: params.limit, after: params.after },
    });
  }

  /** Deletes the agent and every version of it (runs made from it keep what they took). */
  async delete(name: string, opts: RequestOptions = {}): Promise<void> {
    await this.send('DELETE', this.path(name), opts);
  }
}
