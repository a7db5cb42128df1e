import { RetryableError, type AssistantMessage, type ToolCall } from '@agentq/shared/core';

/** Parallel tool calls one response may make: a tool-call `index` is an integer below this. */
export const MAX_TOOL_CALLS = 128;

/** Token counts as a response reports them. */
export interface StreamUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Of the prompt tokens, those the provider served from its cache (priced apart when a price says so). */
  cached_tokens?: number;
}

/**
 * Assembles one streamed assistant message from its chunks (text, refusal, tool calls whose
 * pieces are keyed by `index`, usage, finish reason). Every chunk is the provider's JSON, not
 * checked by the SDK, so nothing of it is trusted: tool calls are kept in a Map under an index
 * checked to be a small integer (an object indexed by `"__proto__"` is `Array.prototype`),
 * and a chunk whose fields have the wrong types is a malformed stream. A malformed stream is a
 * provider fault, retried as any other: dropping the bad piece instead could lose a tool call
 * or glue pieces of two together, and the run would act on a message the model never sent.
 */
export class StreamedMessage {
  content = '';
  refusal: string | null = null;
  finishReason: string | null = null;
  usage: StreamUsage | null = null;
  readonly #calls = new Map<number, { id: string; name: string; arguments: string }>();

  /** Takes one chunk; returns the text it adds (for streaming it on), if any. */
  add(chunk: unknown): string | undefined {
    const c = chunk as { usage?: unknown; choices?: unknown } | null;
    if (c?.usage) this.usage = usageOf(c.usage) ?? this.usage;
    const choice = Array.isArray(c?.choices)
      ? (c.choices[0] as { delta?: unknown; finish_reason?: unknown } | undefined)
      : undefined;
    if (!choice) return undefined;
    const d = (choice.delta ?? {}) as { content?: unknown; refusal?: unknown; tool_calls?: unknown };
    const text = optionalString(d.content, 'delta.content');
    const refusal = optionalString(d.refusal, 'delta.refusal');
    if (refusal) this.refusal = (this.refusal ?? '') + refusal;
    if (d.tool_calls != null) {
      if (!Array.isArray(d.tool_calls)) throw malformed('delta.tool_calls is not a list');
      for (const tc of d.tool_calls) this.#addToolCall(tc);
    }
    const finish = optionalString(choice.finish_reason, 'finish_reason');
    if (finish) this.finishReason = finish;
    if (text) this.content += text;
    return text || undefined;
  }

  /** The tool calls with a name, in index order; a call the provider gave no id gets one. */
  toolCalls(): ToolCall[] {
    return [...this.#calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, c]) => c)
      .filter((c) => c.name)
      .map((c, i) => ({
        id: c.id || `call_${i}`,
        type: 'function' as const,
        function: { name: c.name, arguments: c.arguments },
      }));
  }

  /** The assistant message assembled so far. */
  message(): AssistantMessage {
    const toolCalls = this.toolCalls();
    const message: AssistantMessage = {
      role: 'assistant',
      content: this.content === '' && toolCalls.length ? null : this.content,
    };
    if (toolCalls.length) message.tool_calls = toolCalls;
    if (this.refusal) message.refusal = this.refusal;
    return message;
  }

  #addToolCall(delta: unknown): void {
    const tc = (delta ?? {}) as { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } };
    const index = tc.index;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= MAX_TOOL_CALLS) {
      throw malformed(`a tool call's index is ${describe(index)}, not an integer from 0 to ${MAX_TOOL_CALLS - 1}`);
    }
    const id = optionalString(tc.id, 'tool_calls[].id');
    const name = optionalString(tc.function?.name, 'tool_calls[].function.name');
    const args = optionalString(tc.function?.arguments, 'tool_calls[].function.arguments');
    let slot = this.#calls.get(index);
    if (!slot) {
      slot = { id: '', name: '', arguments: '' };
      this.#calls.set(index, slot);
    }
    if (id) slot.id = id;
    if (name) slot.name += name;
    if (args) slot.arguments += args;
  }
}

const malformed = (why: string) =>
  new RetryableError(`the model stream is malformed: ${why}`, 'model_stream_malformed');

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw malformed(`${field} is ${describe(value)}, not a string`);
  return value;
}

// The provider's value, short enough for an error message.
function describe(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

// Counts that are not non-negative integers are not counts: such a usage report is ignored
// (the step's usage is then estimated) rather than let into the run's token totals and budgets.
function usageOf(u: unknown): StreamUsage | null {
  const count = (x: unknown) => (typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : undefined);
  const r = u as {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    total_tokens?: unknown;
    prompt_tokens_details?: { cached_tokens?: unknown } | null;
  };
  const prompt = count(r.prompt_tokens);
  const completion = count(r.completion_tokens);
  if (prompt === undefined || completion === undefined) return null;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: count(r.total_tokens) ?? prompt + completion,
    ...(count(r.prompt_tokens_details?.cached_tokens)
      ? { cached_tokens: count(r.prompt_tokens_details?.cached_tokens) }
      : {}),
  };
}
