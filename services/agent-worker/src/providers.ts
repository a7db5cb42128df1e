import OpenAI from 'openai';
import type { ProviderBuckets } from '@agentq/shared/store';
import type { ProviderMetrics } from './provider-metrics.js';
import type { ModelPrice, ProviderConfig, ProvidersConfig } from './providers-config.js';

/** Why a provider cannot take a call now: the step is parked (delayed) and tries again after `waitMs`. */
export class ProviderBusyError extends Error {
  override readonly name = 'ProviderBusyError';
  constructor(
    readonly provider: string,
    readonly reason: 'rate_limit' | 'concurrency' | 'cooldown',
    readonly waitMs: number,
  ) {
    super(`provider ${provider} is busy (${reason}); the step waits ${waitMs} ms`);
  }
}

/** How long a step parked behind a provider's full concurrency waits before it looks again. */
const CONCURRENCY_RECHECK_MS = 200;
/** How long a provider rests after a 429 that gave no Retry-After. */
const DEFAULT_COOLDOWN_MS = 1000;

/**
 * One OpenAI-compatible endpoint: its client, its limits and its prices. Its limits are its
 * own: a call it cannot take now is refused at once (ProviderBusyError), so that the step is
 * parked without holding a worker slot, and the steps of other providers go on.
 */
export class Provider {
  private active = 0;
  private coolUntil = 0;

  constructor(
    readonly name: string,
    readonly client: OpenAI,
    private readonly limits: {
      concurrency?: number;
      rateLimit?: { max: number; ms: number };
      /** Rest after a 429 (a provider of PROVIDERS_CONFIG; OPENAI_BASE_URL's steps wait each on its own). */
      rests?: boolean;
    } = {},
    readonly prices: Record<string, ModelPrice> = {},
    private readonly buckets?: ProviderBuckets,
    private readonly metrics?: ProviderMetrics,
  ) {}

  private busy(reason: ProviderBusyError['reason'], waitMs: number): ProviderBusyError {
    this.metrics?.waited(this.name, reason);
    return new ProviderBusyError(this.name, reason, waitMs);
  }

  /** Whether a call to it needs anything but the call (a limit to check, a rest after a 429). */
  private get limited(): boolean {
    return this.limits.concurrency !== undefined || this.limits.rateLimit !== undefined || this.coolUntil > 0;
  }

  /**
   * Takes room for one call, in this order: a rest after a 429 (this process's), the
   * concurrency of this process, the rate limit shared by every agent-worker (one script call
   * in Redis, only for a provider that has one). Returns the release of the room; throws
   * ProviderBusyError when there is none now.
   */
  async admit(now = Date.now()): Promise<() => void> {
    if (!this.limited) return noop;
    if (this.coolUntil > now) throw this.busy('cooldown', jitter(this.coolUntil - now));
    const { concurrency, rateLimit } = this.limits;
    if (concurrency !== undefined && this.active >= concurrency)
      throw this.busy('concurrency', jitter(CONCURRENCY_RECHECK_MS));
    this.active++;
    let released = false;
    const release = () => {
      if (!released) this.active--;
      released = true;
    };
    if (rateLimit && this.buckets) {
      const waitMs = await this.buckets.take(this.name, rateLimit).catch((err: unknown) => {
        release();
        throw err;
      });
      if (waitMs > 0) {
        release();
        throw this.busy('rate_limit', jitter(waitMs));
      }
    }
    return release;
  }

  /** A committed step of its `model` (as sent to it) cost `usd`. */
  spent(model: string, usd: number): void {
    this.metrics?.spent(`${this.name}/${model}`, usd);
  }

  /** The provider answered 429: this process sends it nothing more until `retryAfterMs` has passed. */
  rest(retryAfterMs: number | undefined, now = Date.now()): void {
    if (!this.limits.rests) return;
    this.metrics?.waited(this.name, 'rate_limited');
    this.coolUntil = Math.max(this.coolUntil, now + Math.max(100, retryAfterMs ?? DEFAULT_COOLDOWN_MS));
  }
}

const noop = () => {};
// Steps parked together wake spread out, not all at once.
const jitter = (ms: number) => Math.round(ms * (1 + Math.random() * 0.2));

/** Where a model goes: its provider, and the name the provider is sent. */
export interface ModelRoute {
  provider: Provider;
  model: string;
}

/**
 * The model providers of an agent-worker: a model `<provider>/<model>` goes to that provider
 * (sent as `<model>`); any other model, to the default provider as it is. Without
 * PROVIDERS_CONFIG there is one provider, OPENAI_BASE_URL, with no limits of its own.
 */
export class Providers {
  private readonly byName: Map<string, Provider>;

  constructor(
    list: Provider[],
    private readonly defaultName: string,
  ) {
    this.byName = new Map(list.map((p) => [p.name, p]));
    if (!this.byName.has(defaultName)) throw new Error(`no provider "${defaultName}"`);
  }

  /** The one provider of a worker without PROVIDERS_CONFIG. */
  static single(client: OpenAI): Providers {
    return new Providers([new Provider('default', client)], 'default');
  }

  /** The providers of PROVIDERS_CONFIG, each client made by `makeClient`. */
  static fromConfig(
    cfg: ProvidersConfig,
    makeClient: (p: ProviderConfig) => OpenAI,
    buckets: ProviderBuckets,
    metrics?: ProviderMetrics,
  ): Providers {
    const list = cfg.providers.map(
      (p) =>
        new Provider(
          p.name,
          makeClient(p),
          {
            rests: true,
            ...(p.concurrency !== undefined ? { concurrency: p.concurrency } : {}),
            ...(p.rateLimit ? { rateLimit: p.rateLimit } : {}),
          },
          p.prices,
          buckets,
          metrics,
        ),
    );
    return new Providers(list, cfg.default);
  }

  route(model: string): ModelRoute {
    const slash = model.indexOf('/');
    const named = slash > 0 ? this.byName.get(model.slice(0, slash)) : undefined;
    return named ? { provider: named, model: model.slice(slash + 1) } : { provider: this.default, model };
  }

  get default(): Provider {
    return this.byName.get(this.defaultName)!;
  }

  all(): Provider[] {
    return [...this.byName.values()];
  }
}

const single = new WeakMap<OpenAI, Providers>();

/** A step's providers: the worker's, or (a worker built without them, as some tests do) its one client's. */
export function providersOf(deps: { providers?: Providers; openai: OpenAI }): Providers {
  if (deps.providers) return deps.providers;
  const known = single.get(deps.openai);
  if (known) return known;
  const made = Providers.single(deps.openai);
  single.set(deps.openai, made);
  return made;
}
