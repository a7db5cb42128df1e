import type { RedisClient } from '../infra/redis.js';
import { globalKeys } from '../store/keys.js';
import { redisScript } from '../store/redis-script.js';
import { limitsOf, type TenantTable } from '../tenants/limits.js';

/** The keys every admitting script takes (see includes/admission.lua). */
interface AdmitKeys {
  backlogKey: string;
  limitsKey: string;
  activeTotalKey: string;
  vclockKey: string;
  pendingKey: string;
}
const admitKeys = (k: AdmitKeys) => [k.backlogKey, k.limitsKey, k.activeTotalKey, k.vclockKey, k.pendingKey];
/** Where the admitting loop finds each tenant's line and slots. */
interface AdmitArgs {
  now: number;
  linePrefix: string;
  activePrefix: string;
  most: number;
}
const admittedIds = (r: unknown) => r as string[];

const arrive = redisScript({
  file: 'admission/arrive',
  keys: (k: AdmitKeys & { tenantsKey: string; lineKey: string; activeKey: string }) => [
    ...admitKeys(k),
    k.tenantsKey,
    k.lineKey,
    k.activeKey,
  ],
  args: (a: AdmitArgs & { tenant: string; runId: string; maxQueued: number }) => [
    a.tenant,
    a.runId,
    a.now,
    a.linePrefix,
    a.activePrefix,
    a.most,
    a.maxQueued,
  ],
  reply: admittedIds,
});

const release = redisScript({
  file: 'admission/release',
  keys: (k: AdmitKeys & { lineKey: string; activeKey: string; waitingKey: string; parkedKey: string }) => [
    ...admitKeys(k),
    k.lineKey,
    k.activeKey,
    k.waitingKey,
    k.parkedKey,
  ],
  args: (a: AdmitArgs & { tenant: string; runId: string }) => [
    a.tenant,
    a.runId,
    a.now,
    a.linePrefix,
    a.activePrefix,
    a.most,
  ],
  reply: admittedIds,
});

const suspend = redisScript({
  file: 'admission/suspend',
  keys: (k: AdmitKeys & { lineKey: string; activeKey: string; reasonKey: string; otherReasonKey: string }) => [
    ...admitKeys(k),
    k.lineKey,
    k.activeKey,
    k.reasonKey,
    k.otherReasonKey,
  ],
  args: (a: AdmitArgs & { tenant: string; runId: string }) => [
    a.tenant,
    a.runId,
    a.now,
    a.linePrefix,
    a.activePrefix,
    a.most,
  ],
  reply: admittedIds,
});

const resume = redisScript({
  file: 'admission/resume',
  keys: (k: { activeTotalKey: string; activeKey: string; reasonKey: string; otherReasonKey: string }) => [
    k.activeTotalKey,
    k.activeKey,
    k.reasonKey,
    k.otherReasonKey,
  ],
  args: (a: { runId: string }) => [a.runId],
  reply: (r) => r === 1,
});

const admitFromLines = redisScript({
  file: 'admission/admit',
  keys: admitKeys,
  args: (a: AdmitArgs) => [a.now, a.linePrefix, a.activePrefix, a.most],
  reply: admittedIds,
});

// Runs admitted per call at most (a release frees one slot; a sweep may catch up on more).
const ADMIT_BATCH = 100;

/** Why an admitted run waits: for an answer (a person, a caller's tool), or on its sub-runs. */
export type WaitReason = 'answer' | 'subruns';

/**
 * Admission of runs into the work queues, per tenant: each tenant has its own line of runs (root
 * runs and sub-runs), so a tenant that floods queues behind itself, never in front of another;
 * runs start as the tenant's max_active_runs (and the total capacity, shared by weight) allow.
 */
export class Admission {
  private readonly g: ReturnType<typeof globalKeys>;
  private readonly now: () => number;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    /** `now`: the clock a run's arrival is ordered by (a test's own). @defaultValue Date.now */
    opts: { now?: () => number } = {},
  ) {
    this.g = globalKeys(prefix);
    this.now = opts.now ?? Date.now;
  }

  private admitting(): AdmitKeys {
    const g = this.g;
    return {
      backlogKey: g.backlog,
      limitsKey: g.limits,
      activeTotalKey: g.activeTotal,
      vclockKey: g.vclock,
      pendingKey: g.pendingRuns,
    };
  }

  private admitArgs(): AdmitArgs {
    return { now: this.now(), linePrefix: this.g.lineOf, activePrefix: this.g.activeOf, most: ADMIT_BATCH };
  }

  private reasonKeys(tenant: string, reason: WaitReason) {
    const [waiting, parked] = [this.g.waitingOf + tenant, this.g.parkedOf + tenant];
    return reason === 'answer'
      ? { reasonKey: waiting, otherReasonKey: parked }
      : { reasonKey: parked, otherReasonKey: waiting };
  }

  /**
   * A queued run (root or sub-run) joins its tenant's line, if the line holds fewer than
   * `maxQueued` runs; returns the runs admitted now (to enqueue), or `full`.
   */
  async arrive(
    tenant: string,
    runId: string,
    maxQueued = Number.MAX_SAFE_INTEGER,
  ): Promise<{ full: boolean; admitted: string[] }> {
    const out = await arrive(
      this.redis,
      {
        ...this.admitting(),
        tenantsKey: this.g.tenants,
        lineKey: this.g.lineOf + tenant,
        activeKey: this.g.activeOf + tenant,
      },
      { ...this.admitArgs(), tenant: tenant, runId, maxQueued },
    );
    return out[0] === '!full' ? { full: true, admitted: [] } : { full: false, admitted: out };
  }

  /** A run ended (or left its line); returns the runs admitted into the freed room. */
  release(tenant: string, runId: string): Promise<string[]> {
    return release(
      this.redis,
      {
        ...this.admitting(),
        lineKey: this.g.lineOf + tenant,
        activeKey: this.g.activeOf + tenant,
        waitingKey: this.g.waitingOf + tenant,
        parkedKey: this.g.parkedOf + tenant,
      },
      { ...this.admitArgs(), tenant: tenant, runId },
    );
  }

  /**
   * Runs that now wait (for `reason`) give their slots up (nothing of them runs while they wait);
   * returns the runs admitted into the room.
   */
  async suspend(tenant: string, runIds: string[], reason: WaitReason = 'answer'): Promise<string[]> {
    const admitted: string[] = [];
    for (const runId of runIds) {
      admitted.push(
        ...(await suspend(
          this.redis,
          {
            ...this.admitting(),
            lineKey: this.g.lineOf + tenant,
            activeKey: this.g.activeOf + tenant,
            ...this.reasonKeys(tenant, reason),
          },
          { ...this.admitArgs(), tenant: tenant, runId },
        )),
      );
    }
    return admitted;
  }

  /**
   * Runs that waited (for `reason`) go on: each that waits for nothing else takes its slot back at
   * once, whatever the tenant's limit (a run that was accepted always runs; the tenant admits no
   * new run until it is under its limit again). A resume that overtakes its suspend (an answer
   * within milliseconds) leaves the run counted as waiting while it runs: the tenant may run one
   * more run than its limit until the reconciling sweep (Runs.reconcileAdmission) counts it again.
   */
  async resume(tenant: string, runIds: string[], reason: WaitReason = 'answer'): Promise<void> {
    for (const runId of runIds) {
      await resume(
        this.redis,
        { activeTotalKey: this.g.activeTotal, activeKey: this.g.activeOf + tenant, ...this.reasonKeys(tenant, reason) },
        { runId },
      );
    }
  }

  /** Admits what there is room for (after limits changed, or from a sweep). */
  admit(): Promise<string[]> {
    return admitFromLines(this.redis, this.admitting(), this.admitArgs());
  }

  /** Publishes every tenant's limits for the admission script (every API process, at start). */
  async publish(table: TenantTable): Promise<void> {
    const slim = (o: string) => {
      const l = limitsOf(table, o);
      return JSON.stringify({
        max_active_runs: l.max_active_runs,
        weight: l.weight,
        max_runs_per_tree: l.max_runs_per_tree,
        max_tokens_per_day: l.max_tokens_per_day,
      });
    };
    const tx = this.redis.multi().del(this.g.limits).hset(this.g.limits, '*', slim(''));
    for (const tenant of table.byTenant.keys()) tx.hset(this.g.limits, tenant, slim(tenant));
    if (table.totalActiveRuns) tx.hset(this.g.limits, '#total', table.totalActiveRuns);
    await tx.exec();
  }

  /** The limits a worker needs of a key (as published): its tree size bound. */
  async treeLimit(tenant: string): Promise<number> {
    const [own, dflt] = await this.redis.hmget(this.g.limits, tenant, '*');
    const raw = own ?? dflt;
    return raw ? Number((JSON.parse(raw) as { max_runs_per_tree?: number }).max_runs_per_tree ?? 1000) : 1000;
  }

  /** Each tenant's max_tokens_per_day as published (`*`: the default), for the tenants that have one. */
  async dailyTokenLimits(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const [tenant, raw] of Object.entries(await this.redis.hgetall(this.g.limits))) {
      if (tenant === '#total') continue;
      const limit = (JSON.parse(raw) as { max_tokens_per_day?: number | null }).max_tokens_per_day;
      if (typeof limit === 'number') out.set(tenant, limit);
    }
    return out;
  }

  /** A key's runs running, waiting in its line, and waiting for an answer. */
  async standing(tenant: string): Promise<{ active: number; queued: number; waiting: number }> {
    const res = ((await this.redis
      .pipeline()
      .scard(this.g.activeOf + tenant)
      .zcard(this.g.lineOf + tenant)
      .scard(this.g.waitingOf + tenant)
      .exec()) ?? []) as Array<[unknown, number]>;
    const [active, queued, waiting] = res.map(([, n]) => Number(n ?? 0));
    return { active, queued, waiting };
  }

  /**
   * Every tenant's runs holding a slot, waiting for an answer, and waiting on their sub-runs, to
   * find those whose process died before releasing, suspending or resuming them.
   */
  async activeByTenant(): Promise<Map<string, { active: string[]; waiting: string[]; parked: string[] }>> {
    const tenants = await this.redis.smembers(this.g.tenants);
    const pipe = this.redis.pipeline();
    for (const o of tenants)
      pipe
        .smembers(this.g.activeOf + o)
        .smembers(this.g.waitingOf + o)
        .smembers(this.g.parkedOf + o);
    const res = (await pipe.exec()) ?? [];
    const at = (i: number) => (res[i]?.[1] as string[]) ?? [];
    return new Map(tenants.map((o, i) => [o, { active: at(3 * i), waiting: at(3 * i + 1), parked: at(3 * i + 2) }]));
  }
}
