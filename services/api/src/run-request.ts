import type { CreateRunBody } from '@agentq/shared/core';
import { HttpError } from './http-error.js';

/** Size limits of a run request, in bytes. */
export interface RunLimits {
  maxInputBytes: number;
  maxContextBytes: number;
}

const bytes = (v: unknown) =>
  v === undefined ? 0 : Buffer.byteLength(typeof v === 'string' ? v : JSON.stringify(v), 'utf8');

/** Checks the per-field size limits of the contract; past one, a 413 naming the fields. */
export function checkSizes(body: CreateRunBody, limits: RunLimits): void {
  const input = bytes(body.input) + bytes(body.messages) + bytes(body.instructions);
  if (input > limits.maxInputBytes) {
    const fields = (['input', 'messages', 'instructions'] as const).filter((f) => body[f] !== undefined);
    throw new HttpError(
      413,
      'payload_too_large',
      `${fields.join(' + ')} take ${input} bytes; the limit is ${limits.maxInputBytes} bytes together`,
      { fields, bytes: input, limit: limits.maxInputBytes },
    );
  }
  const ctx = bytes(typeof body.context === 'string' ? body.context : body.context?.map((d) => d.text).join(''));
  if (ctx > limits.maxContextBytes) {
    throw new HttpError(
      413,
      'payload_too_large',
      `context takes ${ctx} bytes; the limit is ${limits.maxContextBytes}`,
      { fields: ['context'], bytes: ctx, limit: limits.maxContextBytes },
    );
  }
}
