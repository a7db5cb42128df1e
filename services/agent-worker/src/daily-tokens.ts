import type { Admission, TokenTally, UsageMeter } from '@agentq/shared/runs';

/**
 * Whether a tenant has used up its max_tokens_per_day, asked before every model step. The limits
 * are read as the API publishes them, again every `limitsMs`; a tenant without a limit costs no
 * read at all. A tenant with one has its day's tokens read at most every `usageMs`, plus what this
 * worker has counted and not written yet: a run may pass the limit by the steps in flight across
 * workers meanwhile, as a token budget may by the step that crosses it.
 */
export class DailyTokens {
  private limits = new Map<string, number>();
  private limitsReadAt = -Infinity;
  private readonly used = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly deps: { admission: Admission; meter: UsageMeter; tally?: TokenTally },
    private readonly opts: { limitsMs?: number; usageMs?: number } = {},
  ) {}

  async exceeded(tenant: string, now = Date.now()): Promise<boolean> {
    if (now - this.limitsReadAt > (this.opts.limitsMs ?? 5000)) {
      this.limits = await this.deps.admission.dailyTokenLimits();
      this.limitsReadAt = now;
    }
    const limit = this.limits.get(tenant) ?? this.limits.get('*');
    if (limit === undefined) return false;
    let used = this.used.get(tenant);
    if (!used || now - used.at > (this.opts.usageMs ?? 1000)) {
      used = { tokens: await this.deps.meter.tokensToday(tenant, now), at: now };
      this.used.set(tenant, used);
    }
    return used.tokens + (this.deps.tally?.pendingFor(tenant) ?? 0) >= limit;
  }
}
