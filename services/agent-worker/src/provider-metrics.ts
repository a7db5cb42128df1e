import { Counter, type Registry } from 'prom-client';

/** The metrics of model providers (PROVIDERS_CONFIG), on the agent-worker's registry. */
export interface ProviderMetrics {
  /** A step waited (parked) because its provider could not take its call: which provider, and why. */
  waited(provider: string, reason: 'rate_limit' | 'concurrency' | 'cooldown' | 'rate_limited'): void;
  /** A committed step of a priced model cost this much (US dollars); `model` is `<provider>/<model>`. */
  spent(model: string, usd: number): void;
}

export function providerMetrics(registry: Registry): ProviderMetrics {
  const waits = new Counter({
    name: 'agentq_provider_waits_total',
    help:
      'Model steps that waited, parked, for their provider: its rate_limit or concurrency (PROVIDERS_CONFIG), ' +
      'a rest after a 429 (cooldown), or a 429 of their own (rate_limited)',
    labelNames: ['provider', 'reason'],
    registers: [registry],
  });
  // Only models with a price in PROVIDERS_CONFIG are counted: the labels are bounded by the file.
  const spend = new Counter({
    name: 'agentq_model_cost_usd_total',
    help: 'US dollars spent on model calls of committed steps, by model (<provider>/<model>), where prices are known',
    labelNames: ['model'],
    registers: [registry],
  });
  return {
    waited: (provider, reason) => waits.inc({ provider, reason }),
    spent: (model, usd) => spend.inc({ model }, usd),
  };
}
