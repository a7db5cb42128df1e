import type { RedisClient } from '../infra/redis.js';
import { globalKeys } from './keys.js';

/** A tool as the API lists it and the model is offered it. */
export interface ToolCatalogEntry {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  server: string;
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean; destructiveHint?: boolean };
}

/** The tool catalog that tool-workers publish and the API and agent-workers read. */
export class ToolCatalog {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  async get(): Promise<ToolCatalogEntry[]> {
    const raw = await this.redis.get(globalKeys(this.prefix).toolCatalog);
    return raw ? JSON.parse(raw) : [];
  }

  async set(tools: ToolCatalogEntry[]): Promise<void> {
    await this.redis.set(globalKeys(this.prefix).toolCatalog, JSON.stringify(tools));
  }
}
