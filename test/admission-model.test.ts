import { createHash, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { globalKeys } from '@agentq/shared/store';
import { Admission, tenantOfSha256, tenantTable, type WaitReason } from '@agentq/shared/runs';

// Admission's scripts against an in-memory model of its rules (arrive, release, suspend, resume,
// admit): random sequences of operations on real Redis give the same runs admitted, in the same
// order, and leave the same lines, slots and virtual clock as the model.

const redis = new Redis(inject('redisUrl'));
afterAll(() => redis.disconnect());

const TENANT_NAMES = ['a', 'b', 'c'];
const tenantIds = TENANT_NAMES.map((n) => tenantOfSha256(createHash('sha256').update(n).digest('hex')));
/** Run `r<i>` belongs to tenant i % 3. */
const RUNS = Array.from({ length: 15 }, (_, i) => `r${i}`);
const tenantOfRun = (run: string) => tenantIds[Number(run.slice(1)) % 3]!;

interface Limits {
  max: number;
  weight: number;
}
type Op =
  | { op: 'arrive'; run: string; maxQueued: number }
  | { op: 'release'; run: string }
  | { op: 'suspend'; run: string; reason: WaitReason }
  | { op: 'resume'; run: string; reason: WaitReason }
  | { op: 'admit' };

type Scored = Array<{ member: string; score: number }>;
const byScore = (a: { member: string; score: number }, b: { member: string; score: number }) =>
  a.score - b.score || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0);

/** The rules admission's scripts keep, in memory. */
class AdmissionModel {
  readonly lines = new Map<string, Scored>();
  readonly active = new Map<string, Set<string>>();
  readonly waiting = new Map<string, Set<string>>();
  readonly parked = new Map<string, Set<string>>();
  backlog: Scored = [];
  vclock = 0;
  activeTotal = 0;

  constructor(
    private readonly limits: Map<string, Limits>,
    private readonly capacity: number,
  ) {
    for (const t of tenantIds) {
      this.lines.set(t, []);
      this.active.set(t, new Set());
      this.waiting.set(t, new Set());
      this.parked.set(t, new Set());
    }
  }

  apply(o: Op, now: number): string[] {
    const admitted: string[] = [];
    let clock = this.vclock;
    const t = o.op === 'admit' ? '' : tenantOfRun(o.run);
    const underCapacity = () => this.capacity === 0 || this.activeTotal < this.capacity;
    const admit = (run: string, tenant: string) => {
      this.active.get(tenant)!.add(run);
      this.activeTotal++;
      admitted.push(run);
    };
    const backlogged = (tenant: string) => {
      if (this.lines.get(tenant)!.length > 0 && !this.backlog.some((e) => e.member === tenant)) {
        this.backlog.push({ member: tenant, score: clock });
        this.backlog.sort(byScore);
      }
    };
    const admitFromLines = () => {
      for (let i = 0; i < 100; i++) {
        if (!underCapacity()) break;
        const head = this.backlog[0];
        if (!head) break;
        const lim = this.limits.get(head.member)!;
        const line = this.lines.get(head.member)!;
        this.backlog.shift();
        if (this.active.get(head.member)!.size >= lim.max) continue;
        const next = line.shift();
        if (!next) continue;
        admit(next.member, head.member);
        clock = head.score;
        if (line.length > 0) {
          this.backlog.push({ member: head.member, score: head.score + 1 / lim.weight });
          this.backlog.sort(byScore);
        }
      }
      this.vclock = clock;
      return admitted;
    };
    const other = (r: WaitReason) => (r === 'answer' ? this.parked : this.waiting);
    const own = (r: WaitReason) => (r === 'answer' ? this.waiting : this.parked);
    switch (o.op) {
      case 'arrive': {
        if (this.active.get(t)!.has(o.run)) return [o.run];
        const line = this.lines.get(t)!;
        if (line.length > 0 && line.some((e) => e.member === o.run)) return admitFromLines();
        if (line.length >= o.maxQueued) return ['!full'];
        if (line.length === 0 && this.backlog.length === 0) {
          if (underCapacity() && this.active.get(t)!.size < this.limits.get(t)!.max) {
            admit(o.run, t);
            return admitted;
          }
        }
        line.push({ member: o.run, score: now });
        line.sort(byScore);
        backlogged(t);
        return admitFromLines();
      }
      case 'release': {
        if (this.active.get(t)!.delete(o.run)) this.activeTotal--;
        this.waiting.get(t)!.delete(o.run);
        this.parked.get(t)!.delete(o.run);
        const line = this.lines.get(t)!;
        this.lines.set(
          t,
          line.filter((e) => e.member !== o.run),
        );
        backlogged(t);
        return admitFromLines();
      }
      case 'suspend': {
        const wasActive = this.active.get(t)!.delete(o.run);
        if (wasActive || other(o.reason).get(t)!.has(o.run)) own(o.reason).get(t)!.add(o.run);
        if (!wasActive) return admitted;
        this.activeTotal--;
        backlogged(t);
        return admitFromLines();
      }
      case 'resume': {
        if (!own(o.reason).get(t)!.delete(o.run)) return [];
        if (other(o.reason).get(t)!.has(o.run)) return [];
        if (this.active.get(t)!.has(o.run)) return [];
        this.active.get(t)!.add(o.run);
        this.activeTotal++;
        return [];
      }
      case 'admit':
        return admitFromLines();
    }
  }
}

/** What Redis holds of admission: every tenant's line, slots and waits, the backlog, the clock. */
async function snapshot(prefix: string) {
  const g = globalKeys(prefix);
  const scored = (flat: string[]): Scored =>
    Array.from({ length: flat.length / 2 }, (_, i) => ({ member: flat[2 * i]!, score: Number(flat[2 * i + 1]) }));
  const tenants = await Promise.all(
    tenantIds.map(async (t) => ({
      line: scored(await redis.zrange(g.lineOf + t, '0', '-1', 'WITHSCORES')),
      active: (await redis.smembers(g.activeOf + t)).sort(),
      waiting: (await redis.smembers(g.waitingOf + t)).sort(),
      parked: (await redis.smembers(g.parkedOf + t)).sort(),
    })),
  );
  return {
    tenants,
    backlog: scored(await redis.zrange(g.backlog, '0', '-1', 'WITHSCORES')),
    activeTotal: Number((await redis.get(g.activeTotal)) ?? 0),
    vclock: Number((await redis.get(g.vclock)) ?? 0),
  };
}

function modelSnapshot(m: AdmissionModel) {
  return {
    tenants: tenantIds.map((t) => ({
      line: m.lines.get(t)!,
      active: [...m.active.get(t)!].sort(),
      waiting: [...m.waiting.get(t)!].sort(),
      parked: [...m.parked.get(t)!].sort(),
    })),
    backlog: m.backlog,
    activeTotal: m.activeTotal,
    vclock: m.vclock,
  };
}

const run = fc.constantFrom(...RUNS);
const reason = fc.constantFrom<WaitReason>('answer', 'subruns');
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      op: fc.constant('arrive' as const),
      run,
      maxQueued: fc.constantFrom(2, 4, Number.MAX_SAFE_INTEGER),
    }),
  },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('release' as const), run }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('suspend' as const), run, reason }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('resume' as const), run, reason }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('admit' as const) }) },
);
const limits = fc.tuple(
  ...TENANT_NAMES.map(() => fc.record({ max: fc.integer({ min: 1, max: 3 }), weight: fc.constantFrom(0.5, 1, 2, 3) })),
);

describe('admission', () => {
  it('admits, releases, suspends and resumes exactly as its model says, over random sequences', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 20, maxLength: 60, size: 'max' }),
        limits,
        fc.constantFrom(0, 2, 4),
        async (ops, lims, capacity) => {
          const prefix = `adm${randomBytes(4).toString('hex')}`;
          let now = 1_000;
          const admission = new Admission(redis, prefix, { now: () => now });
          await admission.publish(
            tenantTable({
              keys: Object.fromEntries(
                TENANT_NAMES.map((n, i) => [
                  n,
                  {
                    key_sha256: createHash('sha256').update(n).digest('hex'),
                    max_active_runs: lims[i]!.max,
                    weight: lims[i]!.weight,
                  },
                ]),
              ),
              ...(capacity ? { total_active_runs: capacity } : {}),
            }),
          );
          const model = new AdmissionModel(new Map(tenantIds.map((t, i) => [t, lims[i]!])), capacity);
          for (const o of ops) {
            now += 1;
            const expected = model.apply(o, now);
            let got: string[];
            if (o.op === 'admit') got = await admission.admit();
            else if (o.op === 'arrive') {
              const r = await admission.arrive(tenantOfRun(o.run), o.run, o.maxQueued);
              got = r.full ? ['!full'] : r.admitted;
            } else if (o.op === 'release') got = await admission.release(tenantOfRun(o.run), o.run);
            else if (o.op === 'suspend') got = await admission.suspend(tenantOfRun(o.run), [o.run], o.reason);
            else {
              await admission.resume(tenantOfRun(o.run), [o.run], o.reason);
              got = [];
            }
            expect(got, JSON.stringify(o)).toEqual(expected);
            expect(await snapshot(prefix), JSON.stringify(o)).toEqual(modelSnapshot(model));
          }
          const keys = await redis.keys(`${prefix}:*`);
          if (keys.length) await redis.del(...keys);
        },
      ),
      { numRuns: 100 },
    );
  });
});
