import type OpenAI from 'openai';
import { boundedLabel, failSpan, GEN_AI, startChatSpan, type AgentqMetrics, type Span } from '@agentq/shared/infra';

type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;
type Usage = { prompt_tokens?: number; completion_tokens?: number } | null | undefined;

/** One model call being observed: its span, its clock and what the response said. */
export class ModelCall {
  private readonly started = performance.now();
  private finishReasons: string[] = [];
  private usage: Usage;
  private responseModel?: string;
  private responseId?: string;
  private ended = false;

  constructor(
    private readonly span: Span,
    private readonly model: string,
    private readonly metrics?: AgentqMetrics,
    private readonly signal?: AbortSignal,
  ) {}

  chunk(c: Chunk): void {
    if (c.usage) this.usage = c.usage;
    if (c.model) this.responseModel = c.model;
    if (c.id) this.responseId = c.id;
    for (const choice of c.choices ?? [])
      if (choice.finish_reason) this.finishReasons[choice.index ?? 0] = choice.finish_reason;
  }

  fail(err: unknown): void {
    if (this.ended) return;
    failSpan(this.span, err);
    // Cancelled runs, deadlines and worker shutdowns abort calls: not the provider's fault.
    this.end(this.signal?.aborted ? 'aborted' : 'error');
  }

  end(outcome: 'ok' | 'error' | 'aborted' = 'ok'): void {
    if (this.ended) return;
    this.ended = true;
    const input = this.usage?.prompt_tokens;
    const output = this.usage?.completion_tokens;
    const attrs: Record<string, string | number | string[]> = {};
    if (input !== undefined) attrs[GEN_AI.usageInputTokens] = input;
    if (output !== undefined) attrs[GEN_AI.usageOutputTokens] = output;
    const reasons = this.finishReasons.filter(Boolean);
    if (reasons.length) attrs[GEN_AI.responseFinishReasons] = reasons;
    if (this.responseModel) attrs[GEN_AI.responseModel] = this.responseModel;
    if (this.responseId) attrs[GEN_AI.responseId] = this.responseId;
    this.span.setAttributes(attrs);
    this.span.end();
    if (!this.metrics) return;
    this.metrics.modelCallDuration.observe({ model: this.model, outcome }, (performance.now() - this.started) / 1000);
    if (input) this.metrics.modelTokens.inc({ model: this.model, type: 'input' }, input);
    if (output) this.metrics.modelTokens.inc({ model: this.model, type: 'output' }, output);
  }
}

const observers = new WeakMap<OpenAI, (model: string, signal?: AbortSignal) => ModelCall>();

/**
 * Observes every chat-completions call callModel makes with `client`: a `chat <model>` client
 * span (GenAI semantic conventions: model, token usage, finish reasons), a child of the active
 * step span, and the model metrics (latency from request to last streamed chunk, tokens as the
 * provider reports them).
 */
export function observeModelCalls<C extends OpenAI>(client: C, metrics?: AgentqMetrics): C {
  const modelLabel = boundedLabel();
  const server = safeHost(client.baseURL);
  observers.set(
    client,
    (model, signal) =>
      new ModelCall(
        startChatSpan(model, server ? { 'server.address': server } : {}),
        modelLabel(model),
        metrics,
        signal,
      ),
  );
  return client;
}

/** The observation of a call about to be made with `client` to `model`, if its calls are observed; `signal` aborts the call. */
export function startModelCall(client: OpenAI, model: string, signal?: AbortSignal): ModelCall | undefined {
  return observers.get(client)?.(model, signal);
}

function safeHost(url: string): string | undefined {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}
