import { describe, expect, it } from 'vitest';
import { providerBackoff } from './backoff.js';

describe('providerBackoff', () => {
  it("waits the provider's Retry-After when the error carries one", () => {
    expect(providerBackoff(1, { retryAfterMs: 2500 })).toBe(2500);
    expect(providerBackoff(5, { retryAfterMs: 0 })).toBe(100);
    expect(providerBackoff(1, { retryAfterMs: 3_600_000 })).toBe(600_000);
  });

  it('otherwise doubles from 1 s with jitter of ±50 %', () => {
    expect(providerBackoff(1, new Error('x'), 1000, () => 0)).toBe(500);
    expect(providerBackoff(1, new Error('x'), 1000, () => 0.5)).toBe(1000);
    expect(providerBackoff(3, undefined, 1000, () => 0.5)).toBe(4000);
    expect(providerBackoff(30, undefined, 1000, () => 0.5)).toBe(600_000);
  });
});
