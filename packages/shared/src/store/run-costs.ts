import type { RedisClient } from '../infra/redis.js';
import { nanosToUsd } from '../core/schemas/usage.js';
import { runKeys, RUN_FIELDS as F } from './keys.js';
import type { RunState } from './run-hash.js';

/** What runs have spent in money (counted by commit-step.lua where prices are known). */
export class RunCosts {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /**
   * What the run and its whole tree (its root's usage_total) have spent, in US dollars (0 where no
   * price was known), in one round trip: read only for a run with a dollar budget.
   */
  async spent(run: Pick<RunState, 'id' | 'rootRunId'>): Promise<{ run: number; tree: number }> {
    const key = (id: string) => runKeys(this.prefix, id).run;
    const root = run.rootRunId === run.id;
    const [own, tree] = await Promise.all([
      this.redis.hget(key(run.id), F.usageTotalCost),
      root ? null : this.redis.hget(key(run.rootRunId), F.usageTotalCost),
    ]);
    const usd = (v: string | null) => nanosToUsd(Number(v ?? 0));
    return { run: usd(own), tree: usd(root ? own : tree) };
  }
}
