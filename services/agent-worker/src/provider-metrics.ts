import { Counter, type Registry } from 'prom-client';

/** The metrics of model providers (PROVIDERS_CONFIG), on the agent-worker's registry. */
export interface ProviderMetrics {
  /** A step waited (parked) because its provider could not take its call: which provider, and why. */
  waited(provider: string, reason: 'rate_limit' | 'concurrency' | 'cooldown' | 'rate_limited'): void;
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
  return { waited: (provider, reason) => waits.inc({ provider, reason }) };
}
