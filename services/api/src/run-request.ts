import type { ChatMessage, ContextDoc, CreateRunBody, RunSpec } from '@agentq/shared';
import { HttpError } from './http-error.js';

/** Size limits of a run request, in bytes. */
export interface RunLimits {
  maxInputBytes: number;
  maxContextBytes: number;
}

const bytes = (v: unknown) => (v === undefined ? 0 : Buffer.byteLength(typeof v === 'string' ? v : JSON.stringify(v), 'utf8'));

/** Checks the per-field size limits of the contract; past one, a 413 naming the fields. */
export function checkSizes(body: CreateRunBody, limits: RunLimits): void {
  const input = bytes(body.input) + bytes(body.messages) + bytes(body.instructions);
  if (input > limits.maxInputBytes) {
    const fields = (['input', 'messages', 'instructions'] as const).filter((f) => body[f] !== undefined);
    throw new HttpError(413, 'payload_too_large', `${fields.join(' + ')} take ${input} bytes; the limit is ${limits.maxInputBytes} bytes together`, { fields, bytes: input, limit: limits.maxInputBytes });
  }
  const ctx = bytes(typeof body.context === 'string' ? body.context : body.context?.map((d) => d.text).join(''));
  if (ctx > limits.maxContextBytes) {
    throw new HttpError(413, 'payload_too_large', `context takes ${ctx} bytes; the limit is ${limits.maxContextBytes}`, { fields: ['context'], bytes: ctx, limit: limits.maxContextBytes });
  }
}

/** The fixed part of a new root run, and its first messages. */
export function buildRun(body: CreateRunBody, defaultModel: string | undefined, now = Date.now()): { spec: RunSpec; messages: ChatMessage[]; context?: ContextDoc[] } {
  const model = body.model ?? defaultModel;
  if (!model) {
    throw new HttpError(400, 'validation_error', 'model: no model given and the service has no default (set "model" in the request or MODEL on the server)', [
      { field: 'model', message: 'required when MODEL is not set' },
    ]);
  }
  const messages: ChatMessage[] = [];
  if (body.instructions) messages.push({ role: 'system', content: body.instructions });
  if (body.input !== undefined) messages.push({ role: 'user', content: body.input });
  else messages.push(...(body.messages ?? []));
  const spec: RunSpec = {
    model,
    ...(body.instructions !== undefined ? { instructions: body.instructions } : {}),
    ...(body.tools ? { tools: body.tools } : {}),
    max_depth: body.max_depth,
    ...(body.max_total_tokens !== undefined ? { max_total_tokens: body.max_total_tokens } : {}),
    ...(body.timeout_ms !== undefined ? { timeout_ms: body.timeout_ms, deadline_at: now + body.timeout_ms } : {}),
    on_budget_exhausted: body.on_budget_exhausted,
    ...(body.subagents ? { subagents: body.subagents } : {}),
    ...(body.response_format ? { response_format: body.response_format } : {}),
    ...(body.webhook ? { webhook: body.webhook } : {}),
    ...(body.context !== undefined ? { has_context: true } : {}),
    metadata: body.metadata ?? {},
    ancestors: [],
    nesting: 0,
  };
  const context = body.context === undefined ? undefined : typeof body.context === 'string' ? [{ name: 'context', text: body.context }] : body.context;
  if (context) {
    const names = new Set<string>();
    for (const d of context) {
      if (names.has(d.name)) throw new HttpError(400, 'validation_error', `context: two documents are named "${d.name}"; names must be unique`, [{ field: 'context', message: 'duplicate document name' }]);
      names.add(d.name);
    }
  }
  return { spec, messages, ...(context ? { context } : {}) };
}
